package limitertest

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// Builder builds a Constructor with extra options: a key cap, an
// auto-sweep. A package passes func(opts ...hotlimit.Option) Constructor {
// return Adapt(New, opts...) }.
type Builder func(opts ...hotlimit.Option) Constructor

// evictStart is where the clocks of this file's tests start: far from zero,
// as a production clock is.
const evictStart = int64(time.Hour)

// EvictionUnderACall forces each way a key can be evicted (a Sweep, an
// auto-sweep step, a key cap's eviction for a new key) between a call's map
// load of the key and its write, by Allow and by Take: the key, idle, is
// evicted at the call's clock reading, with the eviction asserted (what a
// Sweep returns, the keys held), and the call then decides on the key's
// fresh cell. The call's decision and every later one of the key at that
// time are the sequential model's, so the eviction lost no admission and
// counted none twice. Under the cap of one key, the call's revival of its
// key, whose room another key took, is the cap's documented excess of one
// key; a later new key is denied with the cap's Decision while no key is
// idle, and once both are idle, a new key evicts enough of them to pass
// and the keys held are back within the cap.
func EvictionUnderACall(t *testing.T, build Builder, newModel func(epoch int64) Model, limit int, window time.Duration) {
	w := int64(window)
	idle := int64(idleWindows) * w
	evictors := []struct {
		name string
		opts []hotlimit.Option
		// evict evicts the key "a", idle, at the clock's time, and asserts
		// that it did; it runs inside the call's clock reading.
		evict func(t *testing.T, lim Keyed)
		held  int // keys held after the call, which brings a back
	}{
		{"sweep", nil, func(t *testing.T, lim Keyed) {
			assert.Equal(t, 1, lim.Sweep(), "the Sweep evicted the idle key a")
			assert.Zero(t, lim.Len(), "keys held after the Sweep")
		}, 1},
		{"autosweep", []hotlimit.Option{hotlimit.WithAutoSweep(1)}, func(t *testing.T, lim Keyed) {
			// An insertion at the threshold owes 3 visits, a step pays 32:
			// the 11th insertion's step visits every key listed, a among
			// them, and the new keys, each of which took a request, are
			// not idle.
			const inserted = 12
			for i := range inserted {
				assert.True(t, lim.Allow("n"+strconv.Itoa(i)), "new key %d", i)
			}
			assert.Equal(t, inserted, lim.Len(), "keys held: the auto-sweep evicted a")
		}, 13},
		{"maxkeys=1", []hotlimit.Option{hotlimit.WithMaxKeys(1)}, func(t *testing.T, lim Keyed) {
			assert.True(t, lim.Allow("b"), "a new key at the cap evicts the idle key a and passes")
			assert.Equal(t, 1, lim.Len(), "keys held: b in a's place")
		}, 2},
	}
	for _, ev := range evictors {
		for _, call := range []string{"allow", "take"} {
			t.Run(fmt.Sprintf("evictor=%s/call=%s", ev.name, call), func(t *testing.T) {
				var clock HookClock
				clock.Now.Store(evictStart)
				lim, err := build(ev.opts...)(limit, window, clock.Read)
				require.NoError(t, err)
				model := newModel(evictStart)
				decide := func() hotlimit.Decision {
					if call == "allow" {
						return hotlimit.Decision{Allowed: lim.Allow("a")}
					}
					return lim.Take("a", 1)
				}
				same := func(want, got hotlimit.Decision, msg string, args ...any) {
					if call == "allow" {
						want = hotlimit.Decision{Allowed: want.Allowed}
					} else {
						require.Empty(t, Problem(got, 1), msg)
						// RetryAfter and ResetAfter may be rounded (fixed
						// point): whether it passed, and what remains.
						want.RetryAfter, want.ResetAfter = got.RetryAfter, got.ResetAfter
					}
					assert.Equal(t, want, got, append([]any{msg}, args...)...)
				}

				// a takes a request, and the clock moves on until a is idle.
				same(model("a", 1, evictStart), decide(), "a's first request")
				now := evictStart + idle
				clock.Now.Store(now)

				// The call on a loads a's cell, then reads the clock: the
				// hook evicts a there, before the call writes.
				hooked := false
				clock.Hook = func() {
					hooked = true
					ev.evict(t, lim)
				}
				same(model("a", 1, now), decide(), "the call that a's eviction raced")
				require.True(t, hooked, "the call read the clock, and a was evicted there")
				assert.Equal(t, ev.held, lim.Len(), "keys held: the call brought a back")

				// Every later request of a at that time is the model's: the
				// call's admission counts once, in a's fresh cell.
				for i := range limit + 1 {
					same(model("a", 1, now), decide(), "a's request %d after the race", i)
				}
				if ev.name != "maxkeys=1" {
					return
				}
				// a came back without the cap's check: the documented excess
				// of one key (b, and a revived past the cap), while no key is
				// idle.
				retry := lim.Take("c", 1).RetryAfter
				assert.Equal(t, hotlimit.Decision{Limit: limit, RetryAfter: retry, ResetAfter: retry},
					lim.Take("c", 1), "a new key while no key is idle")
				// Once a and b are idle, the next new key makes room and
				// passes, and the keys held are back within the cap.
				clock.Now.Store(now + idle)
				assert.True(t, lim.Allow("d"), "a new key once every key held is idle")
				assert.Equal(t, 1, lim.Len(), "keys held after the eviction")
			})
		}
	}
}

// KeyCapHammer runs phases in which 8 goroutines flood a limiter capped at
// capKeys with distinct new keys, one request each, while 8 others hammer
// 4 hot keys, under a clock that stands still in each phase and moves
// between phases (within a window, to the next, or far enough that every
// key is idle). Each phase starts with one request of each hot key, made
// alone: it is the model's, or, for a key the cap turned away, the cap's
// Decision, which the model must show the key idle for (only an idle key is
// evicted); such a key sits the phase out. Then the hot keys that passed
// are held and not idle, and the flood must not disturb them: each passes
// exactly what the sequential model passes in the phase. A flood key's
// request passes or gets the cap's Decision. After each phase the keys held
// are within the cap plus the documented excess of revivals (one key per
// caller whose key was evicted under it, at most the goroutines). It runs
// without auto-sweep and with it (from a quarter of the cap), whose steps
// race the cap's walks.
func KeyCapHammer(t *testing.T, build Builder, newModel func(epoch int64) Model, limit int, window time.Duration, capKeys int) {
	for _, autoSweep := range []int{0, capKeys / 4} {
		t.Run(fmt.Sprintf("autosweep=%d", autoSweep), func(t *testing.T) {
			keyCapHammer(t, build(hotlimit.WithMaxKeys(capKeys), hotlimit.WithAutoSweep(autoSweep)), newModel, limit, window, capKeys)
		})
	}
}

// keyCapHammer is KeyCapHammer on a limiter newLimiter builds, capped at
// capKeys.
func keyCapHammer(t *testing.T, newLimiter Constructor, newModel func(epoch int64) Model, limit int, window time.Duration, capKeys int) {
	const (
		flooders = 8
		hammers  = 8
	)
	hot := []string{"h0", "h1", "h2", "h3"}
	phases, floodPer, hotPer := 40, 4*capKeys/flooders, 2*limit
	if testing.Short() {
		phases = 12
	}
	now := evictStart
	var clock atomic.Int64
	clock.Store(now)
	lim, err := newLimiter(limit, window, clock.Load)
	require.NoError(t, err)
	model := newModel(now)
	c := newChecker(t)
	defer c.done()
	capDecision := func(d hotlimit.Decision) bool {
		return d == hotlimit.Decision{Limit: limit, RetryAfter: d.RetryAfter, ResetAfter: d.RetryAfter} && d.RetryAfter > 0
	}
	var next atomic.Int64 // the next flood key
	var capped, turnedAway atomic.Int64
	for phase := range phases {
		switch phase % 3 {
		case 0:
			now += int64(window) / 3
		case 1:
			now += int64(window)
		default:
			now += idleWindows * int64(window)
		}
		clock.Store(now)
		var playing []int // the hot keys held in this phase
		for k, key := range hot {
			d := lim.Take(key, 1)
			if capDecision(d) && model(key, 0, now).Remaining == limit {
				turnedAway.Add(1) // evicted idle, and no room: a new key
				continue
			}
			want := model(key, 1, now)
			assert.Equal(t, want.Allowed, d.Allowed, "phase %d: hot key %s's first request", phase, key)
			assert.Equal(t, want.Remaining, d.Remaining, "phase %d: hot key %s's first request", phase, key)
			playing = append(playing, k)
		}
		want := make([]int, len(hot))
		for _, k := range playing {
			for range hammers * hotPer {
				if model(hot[k], 1, now).Allowed {
					want[k]++
				}
			}
		}
		got := make([]atomic.Int64, len(hot))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range hammers {
			wg.Go(func() {
				<-start
				if len(playing) == 0 {
					return
				}
				for i := range hotPer * len(playing) {
					k := playing[(g+i)%len(playing)]
					var ok bool
					if i%2 == 0 {
						ok = lim.Allow(hot[k])
					} else {
						d := lim.Take(hot[k], 1)
						c.check(d, hot[k], 1, now)
						ok = d.Allowed
					}
					if ok {
						got[k].Add(1)
					}
				}
			})
		}
		for range flooders {
			wg.Go(func() {
				<-start
				for range floodPer {
					key := "flood-" + strconv.FormatInt(next.Add(1), 10)
					d := lim.Take(key, 1)
					c.check(d, key, 1, now)
					if !d.Allowed {
						capped.Add(1)
						assert.True(t, capDecision(d), "phase %d: the cap's Decision for %s: %+v", phase, key, d)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		for _, k := range playing {
			assert.Equal(t, int64(want[k]), got[k].Load(), "phase %d: passes of hot key %s", phase, hot[k])
		}
		assert.LessOrEqual(t, lim.Len(), capKeys+flooders+hammers, "phase %d: keys held", phase)
	}
	t.Logf("flood keys turned away %d, hot keys turned away %d", capped.Load(), turnedAway.Load())
	assert.Positive(t, capped.Load(), "the cap turned flood keys away")
}

// KeyCapEdges checks the key cap's and Sweep's edges on a limiter of limit
// per window. A cap of 0 or below means no cap: thousands of keys in use
// pass. A cap of 1 holds one key: while it is in use a new key gets the
// cap's Decision, and Take(key, 0) of the new key reports a fresh key
// without inserting it; once the held key is idle, the new key takes its
// place; math.MaxInt caps nothing a test can reach. Sweep on an empty
// limiter evicts nothing; on a large one it evicts nothing while every key is
// in use, and every key once all are idle.
func KeyCapEdges(t *testing.T, build Builder, limit int, window time.Duration) {
	many := 50_000
	if testing.Short() || raceEnabled {
		many = 5_000
	}
	idle := int64(idleWindows) * int64(window)
	for _, n := range []int{0, -5, math.MinInt, math.MaxInt} {
		t.Run(fmt.Sprintf("maxkeys=%d", n), func(t *testing.T) {
			var now atomic.Int64
			now.Store(evictStart)
			lim, err := build(hotlimit.WithMaxKeys(n))(limit, window, now.Load)
			require.NoError(t, err)
			assert.Zero(t, lim.Sweep(), "a Sweep of an empty limiter")
			for i := range 2000 {
				require.True(t, lim.Allow("k"+strconv.Itoa(i)), "key %d: no cap", i)
			}
			assert.Equal(t, 2000, lim.Len())
		})
	}
	t.Run("maxkeys=1", func(t *testing.T) {
		var now atomic.Int64
		now.Store(evictStart)
		lim, err := build(hotlimit.WithMaxKeys(1))(limit, window, now.Load)
		require.NoError(t, err)
		assert.Zero(t, lim.Sweep(), "a Sweep of an empty limiter")
		require.True(t, lim.Allow("a"))
		d := lim.Take("b", 1)
		assert.Equal(t, hotlimit.Decision{Limit: limit, RetryAfter: d.RetryAfter, ResetAfter: d.RetryAfter}, d, "a new key while a is in use")
		assert.Positive(t, d.RetryAfter)
		assert.False(t, lim.Allow("b"))
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: limit, Remaining: limit}, lim.Take("b", 0), "a key not held reports fresh")
		assert.Equal(t, 1, lim.Len(), "Take(key, 0) inserts nothing")
		now.Add(idle)
		assert.True(t, lim.Allow("b"), "a, idle, made room")
		assert.Equal(t, 1, lim.Len())
		assert.Zero(t, lim.Sweep(), "b is in use")
		now.Add(idle)
		assert.Equal(t, 1, lim.Sweep(), "b is idle")
		assert.Zero(t, lim.Len())
	})
	t.Run(fmt.Sprintf("sweep/keys=%d", many), func(t *testing.T) {
		var now atomic.Int64
		now.Store(evictStart)
		lim, err := build()(limit, window, now.Load)
		require.NoError(t, err)
		for i := range many {
			require.True(t, lim.Allow("k"+strconv.Itoa(i)), "key %d", i)
		}
		assert.Zero(t, lim.Sweep(), "every key is in use")
		assert.Equal(t, many, lim.Len())
		now.Add(idle)
		assert.Equal(t, many, lim.Sweep(), "every key is idle")
		assert.Zero(t, lim.Len())
		assert.Zero(t, lim.Sweep(), "a Sweep of the emptied limiter")
	})
}
