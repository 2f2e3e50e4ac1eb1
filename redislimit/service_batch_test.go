package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// oneByOneFactory is redislimit.Factory(client, opts...) building oneByOnes.
func oneByOneFactory(client redis.UniversalClient, opts ...hotlimit.Option) hotlimit.Factory {
	f := redislimit.Factory(client, opts...)
	return func(c hotlimit.Config, more ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := f(c, more...)
		if err != nil {
			return nil, err
		}
		rl := l.(*redislimit.Limiter)
		return oneByOne{ContextRefunder: rl, config: rl.Config()}, nil
	}
}

// batchRules has rules of several limits of every algorithm and scope, a
// sliding log among them, one with a limit in shadow mode, and a rule of
// one limit.
var batchRules = service.Rules{
	Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.GCRA, Limit: 9, Window: time.Minute, Scope: hotlimit.PerAPI},
		{Algorithm: hotlimit.SlidingCounter, Limit: 7, Window: time.Minute},
	},
	APIs: map[string]service.Limits{
		"POST /shadow": {
			{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Shadow: true},
			{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
		},
		"POST /two": {
			{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
			{Algorithm: hotlimit.TokenBucket, Limit: 20, Window: time.Minute, Scope: hotlimit.Global},
		},
		"GET /one": {{Algorithm: hotlimit.SlidingCounter, Limit: 4, Window: time.Minute}},
	},
}

// TestServiceRuleOnRedisInOneRoundTrip: a service asks the limits of a rule
// on one Redis client together, in one round trip, rather than one after
// another; a sliding log, asked last on its own, takes one more.
func TestServiceRuleOnRedisInOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	svc, err := service.NewFromRules(batchRules, frozenClock(),
		hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	for api, want := range map[string]int64{"POST /two": 1, "POST /shadow": 1, "GET /any": 2, "GET /one": 1} {
		_, err := svc.TakeContext(ctx, "warm", api, 1) // loads the scripts
		require.NoError(t, err)
		before := trips.pipelines.Load() + trips.singles.Load()
		d, err := svc.TakeContext(ctx, "zed", api, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, api)
		assert.Equal(t, want, trips.pipelines.Load()+trips.singles.Load()-before, "round trips for %s", api)
	}
}

// TestServiceBatchMatchesOneByOne: a random sequence of takes (with and
// without a context), reports, refunds and over-capacity requests on a
// stepped clock decides exactly
// what the same sequence decides when every limit is asked on its own, one
// after another, in the rule's order: the rule's decision, each limit's
// own, their errors. Denials by a limit before others that took the
// request in the same round trip give it back to them, as a denial gives
// back what the limits asked before it took.
func TestServiceBatchMatchesOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	opts := []hotlimit.Option{redislimit.WithTimeout(exactTimeout)}
	batched, err := service.NewFromRules(batchRules, hotlimit.WithClock(clock.Load),
		hotlimit.WithFactory(redislimit.Factory(client, append(opts, redislimit.WithPrefix("batched:"))...)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = batched.Close() })
	single, err := service.NewFromRules(batchRules, hotlimit.WithClock(clock.Load),
		hotlimit.WithFactory(oneByOneFactory(client, append(opts, redislimit.WithPrefix("single:"))...)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = single.Close() })

	rng := rand.New(rand.NewPCG(7, 11))
	users, apis := []string{"ann", "bob"}, []string{"GET /any", "POST /shadow", "POST /two", "GET /one"}
	type held struct {
		b, s service.Receipt
	}
	var receipts []held
	ctx := context.Background()
	denials := 0
	for step := range 600 {
		if rng.IntN(4) == 0 {
			clock.Add(rng.Int64N(int64(20 * time.Second)))
		}
		if len(receipts) > 0 && rng.IntN(5) == 0 {
			i := rng.IntN(len(receipts))
			require.NoError(t, batched.RefundContext(ctx, receipts[i].b), "step %d", step)
			require.NoError(t, single.RefundContext(ctx, receipts[i].s), "step %d", step)
			receipts = append(receipts[:i], receipts[i+1:]...)
			continue
		}
		user, api := users[rng.IntN(len(users))], apis[rng.IntN(len(apis))]
		n := rng.IntN(4) // 0 reports; 3 is more than some limits hold
		if rng.IntN(20) == 0 {
			n = 10 // more than every limit but one ever holds
		}
		what := fmt.Sprintf("step %d: %s %s n=%d", step, user, api, n)
		if rng.IntN(5) == 0 { // without a context
			bd := batched.Take(user, api, n)
			require.Equal(t, single.Take(user, api, n), bd, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
			continue
		}
		if rng.IntN(2) == 0 {
			bd, beach, berr := batched.TakeEach(ctx, user, api, n, nil)
			sd, seach, serr := single.TakeEach(ctx, user, api, n, nil)
			require.NoError(t, berr, what)
			require.NoError(t, serr, what)
			require.Equal(t, sd, bd, what)
			require.Equal(t, seach, beach, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
			continue
		}
		bd, br, berr := batched.TakeReceiptContext(ctx, user, api, n)
		sd, sr, serr := single.TakeReceiptContext(ctx, user, api, n)
		require.NoError(t, berr, what)
		require.NoError(t, serr, what)
		require.Equal(t, sd, bd, what)
		if n > 0 && !bd.Allowed {
			denials++
		}
		require.Equal(t, sr == (service.Receipt{}), br == (service.Receipt{}), what)
		if br != (service.Receipt{}) {
			receipts = append(receipts, held{br, sr})
		}
	}
	assert.Greater(t, denials, 100, "the sequence denies often enough to matter")
}

// TestServiceBatchRedisDownMatchesOneByOne: while Redis is down, a rule
// whose limits are asked together decides as one whose limits are asked in
// turn, by each limit's failure policy (FailOpen, FailClosed), and every
// limit reports its own error.
func TestServiceBatchRedisDownMatchesOneByOne(t *testing.T) {
	for _, policy := range []redislimit.FailPolicy{redislimit.FailOpen, redislimit.FailClosed} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
			t.Cleanup(func() { _ = client.Close() })
			rules := service.Rules{Default: service.Limits{
				{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute},
				{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerUser},
				{Algorithm: hotlimit.GCRA, Limit: 9, Window: time.Minute, Scope: hotlimit.PerAPI},
			}}
			opts := []hotlimit.Option{redislimit.WithFailPolicy(policy), redislimit.WithBreaker(0, 0)}
			batched, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client, opts...)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = batched.Close() })
			single, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(oneByOneFactory(client, opts...)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = single.Close() })
			for i := range 4 {
				bd, beach, berr := batched.TakeEach(context.Background(), "zed", "GET /a", 1+i%2, nil)
				sd, seach, serr := single.TakeEach(context.Background(), "zed", "GET /a", 1+i%2, nil)
				require.Error(t, berr, "request %d", i)
				require.Error(t, serr, "request %d", i)
				require.Equal(t, sd, bd, "request %d", i)
				require.Len(t, beach, 3)
				for j := range beach {
					assert.Error(t, beach[j].Err, "request %d, limit %d", i, j)
					assert.Equal(t, seach[j].Decision, beach[j].Decision, "request %d, limit %d", i, j)
				}
			}
		})
	}
}

// panicky is a limiter whose takes panic.
type panicky struct{ hotlimit.Refunder }

func (panicky) TakeReceipt(string, int) (hotlimit.Decision, hotlimit.Receipt) {
	panic("panicky: take")
}

// TestServiceBatchGivenBackOnPanic: the limits on Redis of a rule are asked
// together, before the others: when a limit between them in the rule's
// order panics in its Take, what both took is given back to Redis, and the
// panic goes on. A request never decided counts nowhere, even in the limit
// that asked in turn would never have been reached.
func TestServiceBatchGivenBackOnPanic(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	onRedis := redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))
	mixed := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Algorithm == hotlimit.SlidingCounter {
			l, err := service.NewLimiter(c, opts...)
			if err != nil {
				return nil, err
			}
			return panicky{l.(hotlimit.Refunder)}, nil
		}
		return onRedis(c, opts...)
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute},
		{Algorithm: hotlimit.SlidingCounter, Limit: 7, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerUser},
	}}, frozenClock(), hotlimit.WithFactory(mixed))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	_, _, err = svc.TakeEach(ctx, "zed", "GET /a", 0, nil) // loads the scripts
	require.NoError(t, err)
	scripts := trips.scripts.Load()
	require.PanicsWithValue(t, "panicky: take", func() { _, _ = svc.TakeContext(ctx, "zed", "GET /a", 2) })
	require.Equal(t, scripts+4, trips.scripts.Load(), "both limits on Redis took the request, and gave it back")
	_, each, err := svc.TakeEach(ctx, "zed", "GET /a", 0, nil)
	require.NoError(t, err)
	require.Len(t, each, 3)
	assert.Equal(t, 4, each[0].Decision.Remaining, "the token bucket got its 2 back")
	assert.Equal(t, 6, each[2].Decision.Remaining, "the fixed window got its 2 back")
}

// benchLimits are the limits of the benchmarks' rules, each with room for
// every request: a token bucket per pair, a fixed window per user, a GCRA
// per api.
var benchLimits = service.Limits{
	{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Second},
	{Algorithm: hotlimit.FixedWindow, Limit: 1 << 20, Window: time.Second, Scope: hotlimit.PerUser},
	{Algorithm: hotlimit.GCRA, Limit: 1 << 20, Window: time.Second, Scope: hotlimit.PerAPI},
}

// BenchmarkServiceRule measures a service rule of 2 and 3 limits on Redis
// (benchLimits), its limits asked together (impl=batched) or
// one after another (impl=onebyone, limiters that hide TakeBatch), by one
// goroutine (g=1) and by 16 at once: ns/op is wall time per decision.
func BenchmarkServiceRule(b *testing.B) {
	srv := redistest.Start(b)
	client := newClient(b, srv)
	factories := map[string]func(redis.UniversalClient, ...hotlimit.Option) hotlimit.Factory{
		"batched": redislimit.Factory, "onebyone": oneByOneFactory,
	}
	for _, limits := range []int{2, 3} {
		for _, g := range []int{1, 16} {
			for _, impl := range []string{"batched", "onebyone"} {
				b.Run(fmt.Sprintf("limits=%d/g=%d/impl=%s", limits, g, impl), func(b *testing.B) {
					svc, err := service.NewFromRules(service.Rules{Default: benchLimits[:limits]},
						hotlimit.WithFactory(factories[impl](client, redislimit.WithPrefix(impl+":"))))
					require.NoError(b, err)
					defer svc.Close()
					ctx := context.Background()
					decide := func(user string) {
						d, err := svc.TakeContext(ctx, user, "GET /a", 1)
						if err != nil || !d.Allowed {
							b.Fatalf("%v %v", d, err)
						}
					}
					decide("warm")
					b.ReportAllocs()
					b.ResetTimer()
					if g == 1 {
						for b.Loop() {
							decide("zed")
						}
						return
					}
					var next atomic.Int64
					b.SetParallelism((g + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						user := fmt.Sprint("u", next.Add(1))
						for pb.Next() {
							decide(user)
						}
					})
				})
			}
		}
	}
}

// BenchmarkServiceRuleRatio measures, by one goroutine, a service rule of
// 2 and 3 limits on Redis with its limits asked together (batched) and in
// turn (onebyone), in alternating blocks of decisions (the order swapped
// every block), so that both see the same load on a busy machine, and
// reports the medians over the blocks of each one's ns per decision and of
// their ratio within a block (batched/onebyone). The rule's limits are
// benchLimits' (outcome=allowed), or a limit that denies every request
// after the first, followed by benchLimits' (outcome=denied).
func BenchmarkServiceRuleRatio(b *testing.B) {
	srv := redistest.Start(b)
	client := newClient(b, srv)
	const block = 20
	strict := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}
	for _, limits := range []int{2, 3} {
		for _, allowed := range []bool{true, false} {
			rule := benchLimits[:limits]
			if !allowed {
				rule = append(service.Limits{strict}, benchLimits[:limits-1]...)
			}
			b.Run(fmt.Sprintf("limits=%d/outcome=%s", limits, map[bool]string{true: "allowed", false: "denied"}[allowed]), func(b *testing.B) {
				benchRatio(b, client, rule, allowed, block)
			})
		}
	}
}

// benchRatio is BenchmarkServiceRuleRatio for one rule, whose decisions are
// to be allowed or not, in blocks of block decisions.
func benchRatio(b *testing.B, client redis.UniversalClient, rule service.Limits, allowed bool, block int) {
	var svcs [2]*service.Service // batched, onebyone
	for i, f := range []func(redis.UniversalClient, ...hotlimit.Option) hotlimit.Factory{redislimit.Factory, oneByOneFactory} {
		svc, err := service.NewFromRules(service.Rules{Default: rule},
			hotlimit.WithFactory(f(client, redislimit.WithPrefix(fmt.Sprint(b.Name(), i, ":")))))
		require.NoError(b, err)
		defer svc.Close()
		svcs[i] = svc
	}
	ctx := context.Background()
	// run makes n decisions by svc and returns its ns per decision.
	run := func(svc *service.Service, n int) float64 {
		start := time.Now()
		for range n {
			if d, err := svc.TakeContext(ctx, "zed", "GET /a", 1); err != nil || d.Allowed != allowed {
				b.Fatalf("%v %v", d, err)
			}
		}
		return float64(time.Since(start)) / float64(n)
	}
	for _, svc := range svcs {
		_, _ = svc.TakeContext(ctx, "zed", "GET /a", 1) // loads the scripts; the strict limit's one request
	}
	var ns [2][]float64
	var ratios []float64
	b.ResetTimer()
	for done, k := 0, 0; done < b.N; k++ {
		n := min(block, b.N-done)
		var t [2]float64
		first := k % 2
		t[first] = run(svcs[first], n)
		t[1-first] = run(svcs[1-first], n)
		ns[0], ns[1] = append(ns[0], t[0]), append(ns[1], t[1])
		ratios = append(ratios, t[0]/max(t[1], 1e-9))
		done += n
	}
	b.StopTimer()
	b.ReportMetric(median(ns[0]), "batched-ns/op")
	b.ReportMetric(median(ns[1]), "onebyone-ns/op")
	b.ReportMetric(median(ratios), "batched/onebyone")
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// TestServiceBatchFailLocalOutageMatchesOneByOne: while Redis is down, the
// limits asked together are left undecided (not decided by their failure
// policy there) and asked in turn, so that FailLocal's in-process limiters,
// whose takes no receipt gives back, count what the limits asked in turn
// count: a user past his own limit leaves the global one to the others.
// Decided by FailLocal in the batch, every request of his would have spent
// the global limit's in-process quota.
func TestServiceBatchFailLocalOutageMatchesOneByOne(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour, Scope: hotlimit.Global},
	}}
	batched, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = batched.Close() })
	single, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(oneByOneFactory(client)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = single.Close() })
	ctx := context.Background()
	for i, user := range []string{"ann", "ann", "ann", "ann", "ann", "bob", "cid", "dan", "eve"} {
		bd, beach, berr := batched.TakeEach(ctx, user, "GET /a", 1, nil)
		sd, seach, serr := single.TakeEach(ctx, user, "GET /a", 1, nil)
		require.Error(t, berr, "request %d: Redis is down", i)
		require.Error(t, serr, "request %d", i)
		require.Equal(t, sd, bd, "request %d: %s", i, user)
		for j := range beach {
			assert.Equal(t, seach[j].Decision, beach[j].Decision, "request %d: %s, limit %d", i, user, j)
		}
		want := user != "ann" && user != "eve" || i == 0 // the global limit holds 4
		assert.Equal(t, want, bd.Allowed, "request %d: %s", i, user)
	}
}
