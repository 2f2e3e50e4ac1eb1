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
