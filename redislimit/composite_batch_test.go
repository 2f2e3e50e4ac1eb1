package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// oneByOneBurst is a oneByOne that says its burst, as the Limiter it hides
// does, so that a composite of them denies a request above it as a
// composite of the Limiters does, without asking.
type oneByOneBurst struct{ oneByOne }

func (o oneByOneBurst) Burst() int { return o.ContextRefunder.(hotlimit.Burster).Burst() }

// compositeTwins builds each composite twice over one Redis client and
// one stepped clock: of Limiters, and of the same Limiters hidden as
// oneByOneBursts, under prefixes of their own. A kid is a child of the
// composites: a Limiter on Redis, an in-memory limiter, or a composite of
// kids.
type compositeTwins struct {
	t      *testing.T
	client redis.UniversalClient
	clock  func() int64
	opts   []hotlimit.Option
	made   int
}

type kid struct {
	c      hotlimit.Config
	memory bool
	kids   []kid
}

// build returns the composite of kids, batched when hidden is false, and
// the leaves it holds, in order, for reports.
func (w *compositeTwins) build(hidden bool, kids []kid) (*composite.Limiter, []hotlimit.Limiter) {
	w.t.Helper()
	var children, leaves []hotlimit.Limiter
	for _, k := range kids {
		w.made++
		switch {
		case k.kids != nil:
			sub, subLeaves := w.build(hidden, k.kids)
			children, leaves = append(children, sub), append(leaves, subLeaves...)
			continue
		case k.memory:
			l, err := service.NewLimiter(k.c, hotlimit.WithClock(w.clock))
			require.NoError(w.t, err)
			children = append(children, l)
		default:
			prefix := fmt.Sprintf("batched%d:", w.made)
			if hidden {
				prefix = fmt.Sprintf("single%d:", w.made)
			}
			rl := newExact(w.t, w.client, k.c, append([]hotlimit.Option{hotlimit.WithClock(w.clock), redislimit.WithPrefix(prefix)}, w.opts...)...)
			if hidden {
				children = append(children, oneByOneBurst{oneByOne{ContextRefunder: rl, config: rl.Config()}})
			} else {
				children = append(children, rl)
			}
		}
		leaves = append(leaves, children[len(children)-1])
	}
	c, err := composite.New(children...)
	require.NoError(w.t, err)
	return c, leaves
}

// twins returns the batched composite of kids and its twin.
func (w *compositeTwins) twins(kids ...kid) (batched, single *composite.Limiter, bLeaves, sLeaves []hotlimit.Limiter) {
	made := w.made
	batched, bLeaves = w.build(false, kids)
	w.made = made // the twin's children are numbered alike
	single, sLeaves = w.build(true, kids)
	return batched, single, bLeaves, sLeaves
}

func onRedis(a hotlimit.Algorithm, limit int) kid {
	return kid{c: hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Minute}}
}

func inMemory(a hotlimit.Algorithm, limit int) kid {
	return kid{c: hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Minute}, memory: true}
}

// compositeKids are composites with two or more children on Redis, of
// every algorithm, a sliding log among them, in-memory children before,
// between and after them, and a composite among them whose own children are
// on Redis.
var compositeKids = [][]kid{
	{
		onRedis(hotlimit.TokenBucket, 4),
		inMemory(hotlimit.FixedWindow, 6),
		onRedis(hotlimit.SlidingLog, 5),
		onRedis(hotlimit.GCRA, 9),
		onRedis(hotlimit.SlidingCounter, 7),
	},
	{
		inMemory(hotlimit.TokenBucket, 3),
		onRedis(hotlimit.FixedWindow, 4),
		onRedis(hotlimit.GCRA, 5),
	},
	{
		onRedis(hotlimit.FixedWindow, 3),
		{kids: []kid{onRedis(hotlimit.TokenBucket, 5), onRedis(hotlimit.GCRA, 20)}},
		onRedis(hotlimit.SlidingCounter, 6),
		inMemory(hotlimit.SlidingLog, 10),
	},
}

// TestCompositeBatchMatchesOneByOne: a random sequence of takes (with and
// without a context), reports, refunds and requests above a child's burst
// on a stepped clock decides, on composites whose children on Redis are
// asked together, exactly what it decides on their twins, whose children
// are asked one after another: the same decisions and receipts, no error,
// and after every step each child reports the same state, so that what a
// denial gave back (those of the batch that took the request after the
// denier too) and what a refund gave back are the same.
func TestCompositeBatchMatchesOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	w := &compositeTwins{t: t, client: newClient(t, srv), clock: clock.Load}
	type twin struct {
		b, s             *composite.Limiter
		bLeaves, sLeaves []hotlimit.Limiter
	}
	var twins []twin
	for _, kids := range compositeKids {
		var tw twin
		tw.b, tw.s, tw.bLeaves, tw.sLeaves = w.twins(kids...)
		twins = append(twins, tw)
	}
	type held struct {
		tw   twin
		key  string
		b, s hotlimit.Receipt
	}
	var receipts []held
	rng := rand.New(rand.NewPCG(3, 5))
	ctx := context.Background()
	denials, refunds := 0, 0
	for step := range 600 {
		if rng.IntN(4) == 0 {
			clock.Add(rng.Int64N(int64(20 * time.Second)))
		}
		tw, key := twins[rng.IntN(len(twins))], []string{"ann", "bob"}[rng.IntN(2)]
		n := rng.IntN(4) // 0 reports; 3 is more than some children hold
		if rng.IntN(20) == 0 {
			n = 10 // above every composite's burst
		}
		what := fmt.Sprintf("step %d: composite %p %s n=%d", step, tw.b, key, n)
		switch op := rng.IntN(6); {
		case op == 0 && len(receipts) > 0:
			i := rng.IntN(len(receipts))
			h := receipts[i]
			receipts = append(receipts[:i], receipts[i+1:]...)
			tw, key = h.tw, h.key
			what = fmt.Sprintf("step %d: refund %s %v", step, key, h.b)
			if rng.IntN(2) == 0 {
				h.tw.b.Refund(key, h.b)
				h.tw.s.Refund(key, h.s)
			} else {
				require.NoError(t, h.tw.b.RefundContext(ctx, key, h.b), what)
				require.NoError(t, h.tw.s.RefundContext(ctx, key, h.s), what)
			}
			refunds++
		case op == 1: // without a context
			bd, br := tw.b.TakeReceipt(key, n)
			sd, sr := tw.s.TakeReceipt(key, n)
			require.Equal(t, sd, bd, what)
			require.Equal(t, sr, br, what)
			if br.N > 0 {
				receipts = append(receipts, held{tw, key, br, sr})
			}
			if n > 0 && !bd.Allowed {
				denials++
			}
		case op == 2:
			bd := tw.b.Take(key, n)
			require.Equal(t, tw.s.Take(key, n), bd, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
		default:
			bd, br, berr := tw.b.TakeReceiptContext(ctx, key, n)
			sd, sr, serr := tw.s.TakeReceiptContext(ctx, key, n)
			require.NoError(t, berr, what)
			require.NoError(t, serr, what)
			require.Equal(t, sd, bd, what)
			require.Equal(t, sr, br, what)
			if br.N > 0 {
				receipts = append(receipts, held{tw, key, br, sr})
			}
			if n > 0 && !bd.Allowed {
				denials++
			}
		}
		for i := range tw.bLeaves {
			require.Equal(t, tw.sLeaves[i].Take(key, 0), tw.bLeaves[i].Take(key, 0), "%s: child %d after", what, i)
		}
	}
	assert.Greater(t, denials, 100, "the sequence denies often enough to matter")
	assert.Greater(t, refunds, 30, "and refunds")
}

// TestCompositeOnRedisInOneRoundTrip: a composite asks its children on one
// Redis client together, in one round trip, where its twin asking them one
// after another takes one each; a sliding log, asked on its own, takes one
// more, as does a composite child of its own children on Redis.
func TestCompositeOnRedisInOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	w := &compositeTwins{t: t, client: client, clock: func() int64 { return int64(time.Hour) }}
	for i, tc := range []struct {
		kids            []kid
		batched, single int64
	}{
		{[]kid{onRedis(hotlimit.TokenBucket, 4), onRedis(hotlimit.FixedWindow, 6), onRedis(hotlimit.GCRA, 9)}, 1, 3},
		{compositeKids[0], 2, 4},
		{compositeKids[2], 2, 4},
	} {
		b, s, _, _ := w.twins(tc.kids...)
		for _, c := range []*composite.Limiter{b, s} {
			_, err := c.TakeContext(context.Background(), "warm", 1) // loads the scripts
			require.NoError(t, err)
		}
		for _, c := range []struct {
			l    *composite.Limiter
			want int64
		}{{b, tc.batched}, {s, tc.single}} {
			before := trips.pipelines.Load() + trips.singles.Load()
			d, err := c.l.TakeContext(context.Background(), "zed", 1)
			require.NoError(t, err)
			require.True(t, d.Allowed, "composite %d", i)
			assert.Equal(t, c.want, trips.pipelines.Load()+trips.singles.Load()-before, "round trips of composite %d", i)
		}
	}
}

// TestCompositeBatchGivenBackOnPanic: the children on Redis of a composite
// are asked together when a take reaches the first: when a child between
// them panics in its Take, what both took is given back to Redis, and the
// panic goes on. A request never decided counts nowhere, even in the child
// that asked in order would never have been reached.
func TestCompositeBatchGivenBackOnPanic(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	tb := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute}, frozenClock())
	fw := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute}, frozenClock())
	memory, err := service.NewLimiter(hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 7, Window: time.Minute})
	require.NoError(t, err)
	c, err := composite.New(tb, panicky{memory.(hotlimit.Refunder)}, fw)
	require.NoError(t, err)
	take(t, tb, "zed", 0) // loads the scripts
	take(t, fw, "zed", 0)
	for _, call := range []struct {
		name string
		take func()
	}{
		{"TakeContext", func() { _, _ = c.TakeContext(context.Background(), "zed", 2) }},
		{"Take", func() { c.Take("zed", 2) }},
	} {
		scripts, pipelines := trips.scripts.Load(), trips.pipelines.Load()
		require.PanicsWithValue(t, "panicky: take", call.take, call.name)
		require.Equal(t, pipelines+1, trips.pipelines.Load(), "%s: both took the request together", call.name)
		require.Equal(t, scripts+4, trips.scripts.Load(), "%s: and gave it back", call.name)
		assert.Equal(t, 4, take(t, tb, "zed", 0).Remaining, "%s: the token bucket got its 2 back", call.name)
		assert.Equal(t, 6, take(t, fw, "zed", 0).Remaining, "%s: the fixed window got its 2 back", call.name)
	}
}

// TestCompositeBatchRedisDownMatchesOneByOne: while Redis is down, a
// composite whose children on Redis are asked together decides as its
// twin asking them in turn, by their failure policy (FailOpen, FailClosed),
// with an error, and, when FailClosed denies, the error of the child that
// decided.
func TestCompositeBatchRedisDownMatchesOneByOne(t *testing.T) {
	for _, policy := range []redislimit.FailPolicy{redislimit.FailOpen, redislimit.FailClosed} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
			t.Cleanup(func() { _ = client.Close() })
			w := &compositeTwins{t: t, client: client, clock: func() int64 { return int64(time.Hour) },
				opts: []hotlimit.Option{redislimit.WithFailPolicy(policy), redislimit.WithBreaker(0, 0)}}
			for i, kids := range compositeKids {
				b, s, _, _ := w.twins(kids...)
				for j := range 4 {
					what := fmt.Sprintf("composite %d, request %d", i, j)
					bd, br, berr := b.TakeReceiptContext(context.Background(), "zed", 1+j%2)
					sd, sr, serr := s.TakeReceiptContext(context.Background(), "zed", 1+j%2)
					require.Error(t, berr, what)
					require.Error(t, serr, what)
					require.Equal(t, sd, bd, what)
					require.Equal(t, sr, br, what)
					assert.Equal(t, composite.DecidingError(serr) == nil, composite.DecidingError(berr) == nil, what)
					require.Equal(t, s.Take("zed", 1+j%2), b.Take("zed", 1+j%2), what)
				}
			}
		})
	}
}

// TestCompositeLeasedChildAskedInItsPlace: a child that leases
// (redislimit.WithLease: TakeAll decides its take by itself) is not asked
// with the children of the batch but in its place, so that a request a
// child before it denies never spends from its lease: asked ahead, each
// such request would spend one and give it back stamped with the lease's
// time, less what refilled since. A user past his own limit leaves the
// leased global limit as its twin asking every child in turn does.
func TestCompositeLeasedChildAskedInItsPlace(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	build := func(prefix string, hide bool) (*composite.Limiter, *redislimit.Limiter) {
		opts := func(name string, more ...hotlimit.Option) []hotlimit.Option {
			return append([]hotlimit.Option{hotlimit.WithClock(clock.Load), redislimit.WithPrefix(prefix + name)}, more...)
		}
		user := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}, opts("user:")...)
		api := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 50, Window: time.Hour}, opts("api:")...)
		global := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute},
			opts("global:", redislimit.WithLease(5, time.Minute))...)
		var children []hotlimit.Limiter
		for _, l := range []*redislimit.Limiter{user, api, global} {
			if hide {
				children = append(children, oneByOneBurst{oneByOne{ContextRefunder: l, config: l.Config()}})
			} else {
				children = append(children, l)
			}
		}
		c, err := composite.New(children...)
		require.NoError(t, err)
		return c, global
	}
	batched, bGlobal := build("batched:", false)
	single, sGlobal := build("single:", true)
	ctx := context.Background()
	for _, c := range []*composite.Limiter{batched, single} {
		d, _, err := c.TakeReceiptContext(ctx, "ann", 1) // ann's limit spent, the global one leased
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	clock.Add(int64(12 * time.Second)) // two tokens refill
	for i := range 3 {
		bd, _, err := batched.TakeReceiptContext(ctx, "ann", 1)
		require.NoError(t, err)
		sd, _, err := single.TakeReceiptContext(ctx, "ann", 1)
		require.NoError(t, err)
		require.False(t, bd.Allowed, "request %d: ann's own limit", i)
		assert.Equal(t, sd, bd, "request %d", i)
		assert.Equal(t, redislimit.LeaseLeft(sGlobal, "ann"), redislimit.LeaseLeft(bGlobal, "ann"), "request %d: the lease as it was", i)
		assert.Equal(t, take(t, sGlobal, "ann", 0), take(t, bGlobal, "ann", 0), "request %d: the global limit as it was", i)
	}
}

// TestCompositeFailLocalOutageMatchesOneByOne: while Redis is down, the
// children asked together are left undecided and asked in their place, so
// that FailLocal's in-process limiters count what they count for the twin
// asking every child in turn: a request the first child denies spends
// nothing of the second's in-process quota.
func TestCompositeFailLocalOutageMatchesOneByOne(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	build := func(hide bool) (*composite.Limiter, *redislimit.Limiter) {
		first := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}, frozenClock())
		second := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour}, frozenClock())
		children := []hotlimit.Limiter{first, second}
		if hide {
			children = []hotlimit.Limiter{oneByOneBurst{oneByOne{ContextRefunder: first, config: first.Config()}},
				oneByOneBurst{oneByOne{ContextRefunder: second, config: second.Config()}}}
		}
		c, err := composite.New(children...)
		require.NoError(t, err)
		return c, second
	}
	batched, bSecond := build(false)
	single, sSecond := build(true)
	ctx := context.Background()
	for i := range 5 {
		bd, _, berr := batched.TakeReceiptContext(ctx, "k", 1)
		sd, _, serr := single.TakeReceiptContext(ctx, "k", 1)
		require.Error(t, berr, "request %d: Redis is down", i)
		require.Error(t, serr, "request %d", i)
		assert.Equal(t, sd, bd, "request %d", i)
		assert.Equal(t, i == 0, bd.Allowed, "request %d", i)
	}
	bRem, sRem := bSecond.Take("k", 0).Remaining, sSecond.Take("k", 0).Remaining
	assert.Equal(t, sRem, bRem, "the second child's in-process quota")
	assert.Equal(t, 3, bRem)
}
