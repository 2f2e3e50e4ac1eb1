package service_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// refundAlgorithms are the algorithms that count, and so give back.
var refundAlgorithms = []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow,
	hotlimit.SlidingLog, hotlimit.GCRA, hotlimit.SlidingCounter}

// newDirect builds c's limiter with its package's constructor, beside the
// service.
func newDirect(t *testing.T, c hotlimit.Config, opts ...hotlimit.Option) hotlimit.Refunder {
	t.Helper()
	var l hotlimit.Refunder
	var err error
	switch c.Algorithm {
	case hotlimit.TokenBucket:
		l, err = tokenbucket.New(c.Limit, c.Window, opts...)
	case hotlimit.FixedWindow:
		l, err = fixedwindow.New(c.Limit, c.Window, opts...)
	case hotlimit.SlidingLog:
		l, err = slidinglog.New(c.Limit, c.Window, opts...)
	case hotlimit.GCRA:
		l, err = gcra.New(c.Limit, c.Window, opts...)
	case hotlimit.SlidingCounter:
		l, err = slidingcounter.New(c.Limit, c.Window, opts...)
	default:
		t.Fatalf("no limiter for %v", c.Algorithm)
	}
	require.NoError(t, err)
	return l
}

// stateKeyOf is the key the service counts a limit of scope under.
func stateKeyOf(scope hotlimit.Scope, user, api string) string {
	switch scope {
	case hotlimit.PerUser:
		return "user|" + user
	case hotlimit.PerAPI:
		return "api|" + api
	case hotlimit.Global:
		return "global"
	}
	return fmt.Sprintf("%d:%s|%s", len(user), user, api)
}

// recordingFactory builds the in-memory limiters, as the service does
// without a factory, and keeps each by its Config, so that a test can read
// the state of the very limiters the service asks.
type recordingFactory struct {
	mu    sync.Mutex
	built map[hotlimit.Config]hotlimit.Limiter
}

func (f *recordingFactory) build(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	l, err := service.NewLimiter(c, opts...)
	if err == nil {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.built == nil {
			f.built = map[hotlimit.Config]hotlimit.Limiter{}
		}
		f.built[c] = l
	}
	return l, err
}

// of returns the limiter built for c, without its scope and shadow mode.
func (f *recordingFactory) of(t *testing.T, c hotlimit.Config) hotlimit.Limiter {
	t.Helper()
	c.Scope, c.Shadow = hotlimit.PerPair, false
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.built[c]
	require.True(t, ok, "no limiter built for %v", c)
	return l
}

// directRule is a rule of limits run on directly built limiters, all or
// nothing as a service rule of several limits runs them: asked in order
// (sliding logs last: the rules here hold limits of one algorithm, so in
// the rule's order), and on a denial the limits that took give it back, in
// reverse order, each by its own receipt.
type directRule struct {
	limits service.Limits
	lims   []hotlimit.Refunder
}

// directTake is one TakeReceipt of a directRule: the receipts of each limit.
type directTake struct {
	receipts []hotlimit.Receipt
	user     string
	api      string
}

func (r *directRule) take(user, api string, n int) (hotlimit.Decision, directTake) {
	// n is at most every limit's capacity, so every limit is asked.
	took := directTake{receipts: make([]hotlimit.Receipt, len(r.limits)), user: user, api: api}
	var d hotlimit.Decision
	counted := false
	for i, c := range r.limits {
		cd, rc := r.lims[i].TakeReceipt(stateKeyOf(c.Scope, user, api), n)
		if !cd.Allowed && c.Shadow {
			continue
		}
		if !cd.Allowed {
			r.refund(took, i)
			rem := cd.Remaining
			for j, o := range r.limits {
				if j != i && !o.Shadow {
					rem = min(rem, r.lims[j].Take(stateKeyOf(o.Scope, user, api), 0).Remaining)
				}
			}
			return hotlimit.Decision{Remaining: rem}, directTake{}
		}
		took.receipts[i] = rc
		if !c.Shadow && (!counted || cd.Remaining < d.Remaining) {
			d.Remaining = cd.Remaining
		}
		counted = counted || !c.Shadow
	}
	d.Allowed = true
	return d, took
}

// refund gives back what the first upto limits took by took.
func (r *directRule) refund(took directTake, upto int) {
	for j := upto - 1; j >= 0; j-- {
		r.lims[j].Refund(stateKeyOf(r.limits[j].Scope, took.user, took.api), took.receipts[j])
	}
}

// TestRefundAgreesWithTheLimitersRefunds runs random TakeReceipts and
// Refunds (some receipts given back at once, some late, after the clock
// moved, some never, none twice) on a stepped fake clock through a Service
// and, beside it, through the same algorithms built directly on the same
// keys, taken all or nothing and given back by their own receipts: every
// decision's Allowed and Remaining agree, and after every step so does
// each limit's Remaining under every key. For each algorithm, a rule of
// one limit and a rule of three limits of two scopes, one in shadow mode.
func TestRefundAgreesWithTheLimitersRefunds(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 150
	}
	users, apis := []string{"zed", "amy"}, []string{"GET /pay", "GET /a"}
	for _, alg := range refundAlgorithms {
		rules := map[string]service.Limits{
			"one": {{Algorithm: alg, Limit: 4, Window: time.Second}},
			"three": {
				{Algorithm: alg, Limit: 4, Window: time.Second},
				{Algorithm: alg, Limit: 6, Window: 2 * time.Second, Scope: hotlimit.PerUser},
				{Algorithm: alg, Limit: 2, Window: time.Second, Shadow: true},
			},
		}
		for name, ls := range rules {
			t.Run(fmt.Sprintf("%v/%s", alg, name), func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(time.Hour))
				clock := hotlimit.WithClock(now.Load)
				f := &recordingFactory{}
				s, err := service.NewFromRules(service.Rules{Default: ls}, clock, hotlimit.WithFactory(f.build))
				require.NoError(t, err)
				direct := &directRule{limits: ls}
				for _, c := range ls {
					direct.lims = append(direct.lims, newDirect(t, c, clock))
				}
				type pending struct {
					svc    service.Receipt
					direct directTake
					at     int64 // the clock when it was taken
				}
				var held []pending
				var allowed, denied, refunds, late int // the steps' kinds, asserted
				rng := rand.New(rand.NewPCG(uint64(alg), uint64(len(ls))))
				for step := range steps {
					switch x := rng.IntN(10); {
					case x < 2:
						now.Add(int64([]time.Duration{time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, time.Second}[rng.IntN(4)]))
					case x < 5 && len(held) > 0:
						i := rng.IntN(len(held))
						p := held[i]
						held = append(held[:i], held[i+1:]...)
						s.Refund(p.svc)
						direct.refund(p.direct, len(ls))
						refunds++
						if p.at != now.Load() {
							late++
						}
					default:
						user, api, n := users[rng.IntN(2)], apis[rng.IntN(2)], 1+rng.IntN(3)
						d, r := s.TakeReceipt(user, api, n)
						want, took := direct.take(user, api, n)
						require.Equal(t, want.Allowed, d.Allowed, "step %d: take %d for (%s, %s)", step, n, user, api)
						assert.Equal(t, want.Remaining, d.Remaining, "step %d: take %d for (%s, %s)", step, n, user, api)
						if d.Allowed {
							held = append(held, pending{r, took, now.Load()})
							allowed++
						} else {
							assert.Equal(t, service.Receipt{}, r, "step %d: a denial takes nothing", step)
							denied++
						}
					}
					for _, c := range ls {
						for _, user := range users {
							for _, api := range apis {
								key := stateKeyOf(c.Scope, user, api)
								want := direct.lims[slicesIndex(ls, c)].Take(key, 0)
								got := f.of(t, c).Take(key, 0)
								require.Equal(t, want.Remaining, got.Remaining, "step %d: %v under %q", step, c, key)
							}
						}
					}
				}
				require.NotZero(t, allowed, "takes that passed")
				require.NotZero(t, denied, "takes denied")
				require.NotZero(t, refunds-late, "refunds at the time of their take")
				require.NotZero(t, late, "refunds after the clock moved")
				require.NotEmpty(t, held, "receipts never refunded")
			})
		}
	}
}

// slicesIndex is the index of c in ls.
func slicesIndex(ls service.Limits, c hotlimit.Config) int {
	for i, o := range ls {
		if o == c {
			return i
		}
	}
	return -1
}

// remainingByLimit returns each limit's Remaining for (user, api), keyed by
// the limit's Limit, as TakeEach reports them with n = 0.
func remainingByLimit(t *testing.T, s *service.Service, user, api string) map[int]int {
	t.Helper()
	_, each, err := s.TakeEach(t.Context(), user, api, 0, nil)
	require.NoError(t, err)
	out := map[int]int{}
	for _, ld := range each {
		out[ld.Config.Limit] = ld.Decision.Remaining
	}
	return out
}

// TestRefundOfADenialGivesNothingBack: a rule of two limits whose second
// denies gives the zero Receipt (the first gave back what it took when the
// second denied), and refunding it leaves both limits as they are.
func TestRefundOfADenialGivesNothingBack(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Scope: hotlimit.PerUser},
	}}, clock)
	require.NoError(t, err)
	d, _ := s.TakeReceipt("zed", "GET /pay", 1)
	require.True(t, d.Allowed)
	d, _ = s.TakeReceipt("zed", "GET /a", 1) // the user's last request
	require.True(t, d.Allowed)
	before := remainingByLimit(t, s, "zed", "GET /pay")
	require.Equal(t, map[int]int{5: 4, 2: 0}, before)

	d, r := s.TakeReceipt("zed", "GET /pay", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, service.Receipt{}, r)
	s.Refund(r)
	assert.Equal(t, before, remainingByLimit(t, s, "zed", "GET /pay"))
}

// TestRefundOfOneLimitGivesItBack: a rule of one limit gives back what its
// Take took, and its zero Receipt, of a denial, gives nothing.
func TestRefundOfOneLimitGivesItBack(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	for _, alg := range refundAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			s, err := service.New(hotlimit.Config{Algorithm: alg, Limit: 3, Window: time.Minute}, clock)
			require.NoError(t, err)
			d, r := s.TakeReceipt("zed", "GET /pay", 2)
			require.True(t, d.Allowed)
			require.Equal(t, 1, d.Remaining)
			d, denied := s.TakeReceipt("zed", "GET /pay", 2)
			require.False(t, d.Allowed)
			assert.Equal(t, service.Receipt{}, denied)
			s.Refund(denied)
			assert.Equal(t, 1, s.Take("zed", "GET /pay", 0).Remaining)
			s.Refund(r)
			assert.Equal(t, 3, s.Take("zed", "GET /pay", 0).Remaining)
			assert.Equal(t, 3, s.Take("zed", "GET /a", 0).Remaining, "another pair's quota is its own")
		})
	}
}

// TestUnlimitedAndShadowDeniedTakeNothing: a rule of hotlimit.Unlimited,
// and a limit in shadow mode that would have denied, give the zero
// Receipt.
func TestUnlimitedAndShadowDeniedTakeNothing(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute, Shadow: true}},
		Users:   map[string]service.Limits{"vip": {{Algorithm: hotlimit.Unlimited}}},
	}, clock)
	require.NoError(t, err)
	d, r := s.TakeReceipt("vip", "GET /pay", 3)
	require.True(t, d.Allowed)
	assert.Equal(t, service.Receipt{}, r)

	d, r = s.TakeReceipt("zed", "GET /pay", 1)
	require.True(t, d.Allowed)
	assert.NotEqual(t, service.Receipt{}, r, "the shadow limit took it")
	d, shadowDenied := s.TakeReceipt("zed", "GET /pay", 1)
	require.True(t, d.Allowed, "in shadow mode")
	assert.Equal(t, service.Receipt{}, shadowDenied, "the shadow limit took nothing")
	s.Refund(r)
	assert.Equal(t, 1, s.Take("zed", "GET /pay", 0).Remaining)
}

// TestRefundGoesToTheLimitersThatTook: a Replace between TakeReceipt and
// Refund. The limit the new rules keep keeps its state and gets the
// refund; one they changed, and one they removed, are given back in their
// old limiters, and the new limiter, which took nothing, gets nothing.
func TestRefundGoesToTheLimitersThatTook(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	kept := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
	changed := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser}
	removed := hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 4, Window: time.Minute}
	f := &recordingFactory{}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{kept, changed, removed}}, clock, hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	d, r := s.TakeReceipt("zed", "GET /pay", 2)
	require.True(t, d.Allowed)

	changedNow := changed
	changedNow.Limit = 4
	require.NoError(t, s.Replace(service.Rules{Default: service.Limits{kept, changedNow}}))
	d = s.Take("zed", "GET /pay", 1)
	require.True(t, d.Allowed)
	pair, user := stateKeyOf(hotlimit.PerPair, "zed", "GET /pay"), stateKeyOf(hotlimit.PerUser, "zed", "GET /pay")
	require.Equal(t, 2, f.of(t, kept).Take(pair, 0).Remaining, "kept its state across the Replace")
	require.Equal(t, 3, f.of(t, changedNow).Take(user, 0).Remaining)

	s.Refund(r)
	assert.Equal(t, 4, f.of(t, kept).Take(pair, 0).Remaining, "the kept limit gets its 2 back")
	assert.Equal(t, 3, f.of(t, changedNow).Take(user, 0).Remaining, "the new limiter took nothing")
	assert.Equal(t, 3, f.of(t, changed).Take(user, 0).Remaining, "the old limiter gets its 2 back")
	assert.Equal(t, 4, f.of(t, removed).Take(pair, 0).Remaining, "the removed limit gets its 2 back")
}

// TestTakeReceiptAndRefundRaceToFull: with a frozen clock, G goroutines
// each TakeReceipt one request of one pair, and once all have, each
// refunds its receipt, round after round: in each round no more than the
// rule admits pass (for a rule of one limit, exactly min(G, capacity)),
// and once every round is given back each limit is full again. Run under
// -race.
func TestTakeReceiptAndRefundRaceToFull(t *testing.T) {
	const goroutines = 8
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	rules := map[string]service.Limits{}
	for _, alg := range refundAlgorithms {
		rules[alg.String()] = service.Limits{{Algorithm: alg, Limit: 5, Window: time.Minute}}
	}
	rules["several"] = service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 6, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.SlidingLog, Limit: 7, Window: time.Minute},
		{Algorithm: hotlimit.GCRA, Limit: 8, Window: time.Minute, Scope: hotlimit.PerUser},
	}
	for name, ls := range rules {
		t.Run(name, func(t *testing.T) {
			s, err := service.NewFromRules(service.Rules{Default: ls}, clock)
			require.NoError(t, err)
			most := math.MaxInt
			for _, c := range ls {
				most = min(most, c.Capacity())
			}
			var receipts [goroutines]service.Receipt
			for round := range rounds {
				var admitted atomic.Int64
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						d, r := s.TakeReceipt("zed", "GET /pay", 1)
						receipts[g] = r
						if d.Allowed {
							admitted.Add(1)
						}
					})
				}
				wg.Wait()
				if len(ls) == 1 {
					require.Equal(t, int64(min(goroutines, most)), admitted.Load(), "round %d", round)
				} else {
					require.LessOrEqual(t, admitted.Load(), int64(most), "round %d", round)
				}
				for g := range goroutines {
					wg.Go(func() { s.Refund(receipts[g]) })
				}
				wg.Wait()
			}
			_, each, err := s.TakeEach(t.Context(), "zed", "GET /pay", 0, nil)
			require.NoError(t, err)
			for _, ld := range each {
				assert.Equal(t, ld.Config.Capacity(), ld.Decision.Remaining, "%v", ld.Config)
			}
		})
	}
}

// TestTakeReceiptAndRefundDoNotAllocate: on the in-memory limiters, a
// TakeReceipt and the Refund of its receipt, of a pair seen before,
// allocate nothing, for a rule of one limit or of several of every
// algorithm and scope, and for a denial. The clock is frozen and every key
// holds a request never given back: a refund that returns a key to a new
// key's state frees its cell, and the key's next request allocates it
// again (see the limiters' Refunds).
func TestTakeReceiptAndRefundDoNotAllocate(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	lots := 1 << 20
	rules := map[string]service.Limits{
		"one token bucket": {{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second}},
		"one sliding log":  {{Algorithm: hotlimit.SlidingLog, Limit: 1000, Window: time.Second, Scope: hotlimit.PerUser}},
		"one unlimited":    {{Algorithm: hotlimit.Unlimited}},
		"one that denies":  {{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Hour}},
		"four": {
			{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second, Burst: lots},
			{Algorithm: hotlimit.SlidingLog, Limit: 1000, Window: time.Millisecond, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.FixedWindow, Limit: 1000, Window: time.Hour, Scope: hotlimit.Global, Shadow: true},
			{Algorithm: hotlimit.SlidingCounter, Limit: 100000, Window: time.Minute, Scope: hotlimit.PerAPI},
		},
		"four that deny": {
			{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second},
			{Algorithm: hotlimit.FixedWindow, Limit: lots, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.SlidingCounter, Limit: 100000, Window: time.Minute, Scope: hotlimit.PerAPI},
			{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Hour, Scope: hotlimit.Global},
		},
	}
	for name, ls := range rules {
		t.Run(name, func(t *testing.T) {
			if raceEnabled && len(ls) > 1 {
				t.Skip("the race detector's sync.Pool drops at random the buffers a rule of several limits builds its keys in")
			}
			s, err := service.NewFromRules(service.Rules{Default: ls}, clock)
			require.NoError(t, err)
			// The keys are stored, holding one request that stays taken:
			// a key given back to a new key's state would be evicted.
			s.TakeReceipt("user", "GET /pay", 1)
			assert.Zero(t, testing.AllocsPerRun(100, func() {
				_, r := s.TakeReceipt("user", "GET /pay", 1)
				s.Refund(r)
			}))
		})
	}
}

// TestTakeReceiptIsObservedAsTakeIsAndRefundIsNot: the observer and the
// shadow hook hear of each TakeReceipt as of the same Take on a twin
// service, event for event; a Refund is not a decision, and adds none.
func TestTakeReceiptIsObservedAsTakeIsAndRefundIsNot(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	rules := service.Rules{
		Default: service.Limits{
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
			{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser, Shadow: true},
		},
		APIs: map[string]service.Limits{"GET /one": {{Algorithm: hotlimit.GCRA, Limit: 2, Window: time.Minute, Shadow: true}}},
	}
	type heard struct {
		events []hotlimit.Event
		hooked []string
	}
	twin := func(h *heard) *service.Service {
		s, err := service.NewFromRules(rules, clock,
			hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { h.events = append(h.events, e) })),
			service.WithShadowHook(func(user, api string, e hotlimit.Event) {
				h.hooked = append(h.hooked, user+" "+api+" "+e.Outcome.String())
			}))
		require.NoError(t, err)
		return s
	}
	var byTake, byReceipt heard
	withTake, withReceipt := twin(&byTake), twin(&byReceipt)
	var receipts []service.Receipt
	for _, api := range []string{"GET /pay", "GET /pay", "GET /one", "GET /one", "GET /one", "GET /pay", "GET /pay"} {
		want := withTake.Take("zed", api, 1)
		got, r := withReceipt.TakeReceipt("zed", api, 1)
		require.Equal(t, want, got, api)
		receipts = append(receipts, r)
	}
	require.NotEmpty(t, byTake.hooked, "shadow denials heard")
	assert.Equal(t, byTake, byReceipt)
	for _, r := range receipts {
		withReceipt.Refund(r)
	}
	assert.Equal(t, byTake, byReceipt, "a refund is not heard of")
}

// TestRefundPastAPanickingLimit: a rule of three limits whose second
// panics in its Refund. The panic reaches the caller unchanged, and the
// first limit, given back after it, gets its request back all the same.
func TestRefundPastAPanickingLimit(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	first, panicking, third := cfg(hotlimit.TokenBucket, 3), cfg(hotlimit.FixedWindow, 5), cfg(hotlimit.GCRA, 4)
	var p *limitertest.PanicRefunder
	f := &recordingFactory{}
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := f.build(c, opts...)
		if err == nil && c == panicking {
			p = &limitertest.PanicRefunder{Refunder: l.(hotlimit.Refunder)}
			return p, nil
		}
		return l, err
	}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{first, panicking, third}}, clock, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	d, r := s.TakeReceipt("zed", "GET /pay", 2)
	require.True(t, d.Allowed)

	p.Arm(true)
	assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() { s.Refund(r) }))
	p.Arm(false)
	key := stateKeyOf(hotlimit.PerPair, "zed", "GET /pay")
	assert.Equal(t, 3, f.of(t, first).Take(key, 0).Remaining, "given back after the panic")
	assert.Equal(t, 4, f.of(t, third).Take(key, 0).Remaining, "given back before it")
	assert.Equal(t, 3, f.of(t, panicking).Take(key, 0).Remaining, "the panicking limit gave nothing back")
}

// TestRefundOfLongNames: a rule of one limit gives back under keys too long
// for the stack (a user of 100 bytes, of 600), built in a buffer, as under
// a short one: each pair gets its own request back, and no other pair's.
func TestRefundOfLongNames(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	for _, alg := range refundAlgorithms {
		s, err := service.New(hotlimit.Config{Algorithm: alg, Limit: 3, Window: time.Minute}, clock)
		require.NoError(t, err)
		for _, size := range []int{100, 600} {
			user := strings.Repeat("u", size)
			d, r := s.TakeReceipt(user, "GET /pay", 2)
			require.True(t, d.Allowed)
			d, _ = s.TakeReceipt(user+"v", "GET /pay", 1)
			require.True(t, d.Allowed)
			s.Refund(r)
			assert.Equal(t, 3, s.Take(user, "GET /pay", 0).Remaining, "%v: a user of %d bytes", alg, size)
			assert.Equal(t, 2, s.Take(user+"v", "GET /pay", 0).Remaining, "%v: a user of %d bytes", alg, size+1)
		}
	}
}
