package redislimit_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestIdleKeysLeasesAreSweptWithoutSweep: a flood of distinct keys, each
// coming once, each leasing. Without a call to Sweep, as in a service or
// hotlimitd, the grants for new keys end the expired leases once the
// limiter holds WithAutoSweep's threshold of them: the leases held stay
// bounded, and every idle key's unspent requests are back in Redis. With
// WithAutoSweep(0) every lease stays.
func TestIdleKeysLeasesAreSweptWithoutSweep(t *testing.T) {
	srv := redistest.Start(t)
	const threshold, keys, size, ttl = 16, 200, 5, time.Second
	for _, a := range leasing {
		for _, off := range []bool{false, true} {
			name := a.String()
			if off {
				if a != hotlimit.FixedWindow {
					continue
				}
				name += "/off"
			}
			t.Run(name, func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
				var now atomic.Int64
				now.Store(int64(time.Hour))
				clocked := hotlimit.WithClock(now.Load)
				prefix := redislimit.WithPrefix("autosweep:" + name + ":")
				sweep := hotlimit.WithAutoSweep(threshold)
				if off {
					sweep = hotlimit.WithAutoSweep(0)
				}
				lim := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, ttl), sweep)
				other := newExact(t, newClient(t, srv), c, clocked, prefix)
				key := func(i int) string { return "ip-" + strconv.Itoa(i) }
				most := 0
				for i := range keys {
					d := take(t, lim, key(i), 1)
					require.True(t, d.Allowed, "key %d", i)
					require.Equal(t, c.Limit-1, d.Remaining, "key %d: Redis's 4 and the lease's 5", i)
					redislimit.WaitRetired(lim) // the sweep this grant started, if any
					most = max(most, lim.Len())
					now.Add(int64(ttl)) // every lease granted so far has expired
				}
				if off {
					assert.Equal(t, keys, lim.Len(), "nothing swept")
					assert.Equal(t, c.Limit-1-size, take(t, other, key(0), 0).Remaining, "the first key's lease is still held")
					return
				}
				assert.LessOrEqual(t, most, threshold, "the leases held")
				// Under 200 s of a 10/h refill (half a token), each swept
				// key holds in Redis what its one request left: the
				// buckets' give-back less their refill since, which refilled.
				for i := range keys - threshold {
					assert.Equal(t, c.Limit-1, take(t, other, key(i), 0).Remaining, "key %d: its lease's 5 came back", i)
				}
			})
		}
	}
}

// TestLeaseEndsRacingSpendsConserve races everything that ends a lease
// against the spends from it: workers take from a few hot keys while the
// clock moves past each lease's ttl, so that leases expire and the misses
// replace them (their leftovers given back on goroutines of their own),
// while a goroutine calls Sweep after the workers' calls and the auto-sweep
// (a threshold of 2) ends expired leases as keys come back. However those
// interleave, every leased request is spent once or given back once: after
// Close, Redis counts exactly the requests admitted (a fixed window's
// give-back is exact while its window lasts), and the limiter holds none.
func TestLeaseEndsRacingSpendsConserve(t *testing.T) {
	srv := redistest.Start(t)
	workers, calls := 8, 300
	if testing.Short() {
		calls = 100
	}
	keys := []string{"a", "b", "c", "d"}
	const ttl = time.Millisecond
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: workers * calls, Window: time.Hour}
	var now atomic.Int64
	now.Store(10 * int64(time.Hour)) // a window's start: the calls move it by 0.6 s at most
	clocked := hotlimit.WithClock(now.Load)
	prefix := redislimit.WithPrefix("endrace:")
	lim := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(7, ttl), hotlimit.WithAutoSweep(2))
	other := newExact(t, newClient(t, srv), c, clocked, prefix)

	admitted := make([]atomic.Int64, len(keys))
	called := make(chan struct{}, 1)
	sweeps := 0
	var sweeper sync.WaitGroup
	sweeper.Go(func() {
		for range called {
			sweeps += lim.Sweep()
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				k := (w + i) % len(keys)
				if take(t, lim, keys[k], 1).Allowed {
					admitted[k].Add(1)
				}
				now.Add(int64(ttl) / 4)
				select {
				case called <- struct{}{}:
				default: // a Sweep is due already
				}
			}
		})
	}
	wg.Wait()
	close(called)
	sweeper.Wait()
	require.NoError(t, lim.Close())
	assert.Positive(t, sweeps, "Sweep ended leases")
	assert.Zero(t, lim.Len(), "the closed limiter holds no lease")
	total := int64(0)
	for k, key := range keys {
		total += admitted[k].Load()
		assert.EqualValues(t, c.Limit-int(admitted[k].Load()), take(t, other, key, 0).Remaining,
			"%s: Redis counts exactly the requests admitted", key)
	}
	assert.EqualValues(t, workers*calls, total, "the limit is above the calls: every one passes")
}

// TestAutoSweepCountsOnlyLiveLeases holds the first auto-sweep of the leases
// once it has ended the expired ones, and meanwhile grants leases to 32 new
// keys, which have expired by the next grant: those leases are not live, and
// the next sweep must not wait for twice their number. It waited for twice
// the leases left in the map after each sweep, the expired ones granted
// while it ran included: under a flood of keys each sweep doubled the wait
// for the next, and the map grew without bound (48000 grants for new keys
// from 32 goroutines left 46548 expired leases held, with a threshold of
// 64).
func TestAutoSweepCountsOnlyLiveLeases(t *testing.T) {
	srv := redistest.Start(t)
	const threshold, during, ttl = 16, 32, time.Second
	reached, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	redislimit.SetSweptHook(func() {
		if held.CompareAndSwap(false, true) { // the first sweep only
			reached <- struct{}{}
			<-release
		}
	})
	t.Cleanup(func() { redislimit.SetSweptHook(nil) }) // after the limiter's Close
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(now.Load), redislimit.WithPrefix("livesweep:"),
		redislimit.WithLease(5, ttl), hotlimit.WithAutoSweep(threshold))
	key := func(i int) string { return "ip-" + strconv.Itoa(i) }
	for i := range threshold {
		now.Add(int64(ttl)) // the leases granted before have expired
		require.True(t, take(t, lim, key(i), 1).Allowed, "key %d", i)
	}
	<-reached // the threshold-th grant started a sweep, which ended all but its own lease
	require.Equal(t, 1, lim.Len(), "the live lease of the grant that started the sweep")
	for i := threshold; i < threshold+during; i++ {
		now.Add(int64(ttl))
		require.True(t, take(t, lim, key(i), 1).Allowed, "key %d, during the sweep", i)
	}
	require.Equal(t, 1+during, lim.Len(), "no second sweep while one runs")
	close(release)
	redislimit.WaitRetired(lim)

	now.Add(int64(ttl)) // every lease has expired
	require.True(t, take(t, lim, key(threshold+during), 1).Allowed, "a new key")
	redislimit.WaitRetired(lim)
	assert.Equal(t, 1, lim.Len(), "the new key's grant swept the %d expired leases", 1+during)
}

// TestAutoSweepGivesBackConcurrently freezes Redis (SIGSTOP) as an
// auto-sweep starts, with 19 expired leases to give back: their give-backs
// must all be under way at once, sharing batches as concurrent calls do.
// One give-back at a time, a sweep ended one lease per round trip while a
// flood of new keys from many goroutines was granted a batch of leases per
// round trip, and the leases held grew without bound.
func TestAutoSweepGivesBackConcurrently(t *testing.T) {
	srv := redistest.Start(t)
	const threshold, ttl = 20, time.Second
	var armed atomic.Bool
	redislimit.SetSweepHook(func() {
		if armed.CompareAndSwap(true, false) {
			srv.Pause()
		}
	})
	t.Cleanup(func() { redislimit.SetSweepHook(nil) }) // after the limiter's Close
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(now.Load), redislimit.WithPrefix("sweepers:"),
		redislimit.WithLease(5, ttl), hotlimit.WithAutoSweep(threshold), redislimit.WithBreaker(0, 0))
	t.Cleanup(srv.Resume) // before the limiter's Close
	for i := range threshold - 1 {
		require.True(t, take(t, lim, "ip-"+strconv.Itoa(i), 1).Allowed, "key %d", i)
	}
	require.Equal(t, threshold-1, lim.Len(), "below the threshold: no sweep")
	now.Add(int64(ttl)) // every lease has expired
	armed.Store(true)
	require.True(t, take(t, lim, "ip-last", 1).Allowed, "the grant that starts the sweep")
	assert.Eventually(t, func() bool { return redislimit.InFlight(lim) == threshold-1 }, 5*time.Second, time.Millisecond,
		"the %d give-backs under way at once", threshold-1)
	srv.Resume()
	redislimit.WaitRetired(lim)
	assert.Equal(t, 1, lim.Len(), "the live lease of the grant that started the sweep")
}

// TestLeaseEndedTwiceLeavesNoNilLease ends a key's lease twice, as a Sweep
// and the auto-sweep that both saw it expired do (or Close and a grant under
// way): the key then has no lease, and its next take asks Redis. The second
// removal found no lease and stored a nil one, which the key's next take
// dereferenced: a panic.
func TestLeaseEndedTwiceLeavesNoNilLease(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
	lim := newExact(t, newClient(t, srv), c, frozenClock(), redislimit.WithPrefix("twice:"), redislimit.WithLease(5, time.Second))
	require.True(t, take(t, lim, "k", 1).Allowed)
	require.True(t, redislimit.EndLeaseTwice(lim, "k"), "the grant's lease")
	assert.Zero(t, lim.Len(), "no lease held")
	assert.NotPanics(t, func() {
		d := take(t, lim, "k", 1)
		assert.True(t, d.Allowed, "the 2nd request of 10 (the ended lease's 5 are not given back)")
	})
}
