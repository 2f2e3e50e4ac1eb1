package limitertest

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// remainingAllower is a limiter with AllowRemaining, Allow plus the Remaining
// that Take(key, 1) would report with it.
type remainingAllower interface {
	Keyed
	AllowRemaining(key string) (allowed bool, remaining int)
}

// AllowRemainingAgreesWithTake checks that AllowRemaining answers what
// Take(key, 1) answers, Allowed and Remaining, on twin limiters of limit per
// 10 ms built by newLimiter, under 5000 random clock steps of up to 1 ms
// (one in twenty backwards), sweeps and two keys: denials as well as
// admissions. It also checks that AllowRemaining allocates nothing.
func AllowRemainingAgreesWithTake(t *testing.T, newLimiter Constructor, limit int) {
	const ms = int64(time.Millisecond)
	var now atomic.Int64
	now.Store(int64(time.Hour))
	build := func() remainingAllower {
		l, err := newLimiter(limit, 10*time.Millisecond, now.Load)
		require.NoError(t, err)
		r, ok := l.(remainingAllower)
		require.True(t, ok, "%T has AllowRemaining", l)
		return r
	}
	a, b := build(), build()
	r := rand.New(rand.NewPCG(1, uint64(limit)))
	allowed, denied := 0, 0
	for i := range 5000 {
		step := r.Int64N(ms)
		if r.IntN(20) == 0 {
			step = -step // the clock steps back
		}
		now.Add(step)
		if r.IntN(50) == 0 {
			assert.Equal(t, b.Sweep(), a.Sweep(), "step %d", i)
		}
		key := []string{"k", "j"}[r.IntN(2)]
		want := b.Take(key, 1)
		ok, rem := a.AllowRemaining(key)
		assert.Equal(t, want.Allowed, ok, "step %d", i)
		assert.Equal(t, want.Remaining, rem, "step %d", i)
		if ok {
			allowed++
		} else {
			denied++
		}
	}
	assert.Positive(t, allowed)
	assert.Positive(t, denied)
	assert.Zero(t, testing.AllocsPerRun(100, func() { a.AllowRemaining("k") }), "allocations")
}

// RaceAllowRemaining releases goroutines at once on key, each calling
// allowRemaining (a limiter's AllowRemaining) tries times, and returns the
// Remaining values of the calls that passed, sorted. Under a frozen clock
// they must be what a sequential caller would see, each once: from the
// key's Remaining before the race, less one, down to 0 when the race drains
// it.
func RaceAllowRemaining(allowRemaining func(key string) (bool, int), key string, goroutines, tries int) []int {
	start := make(chan struct{})
	got := make(chan int, goroutines*tries)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			<-start
			for range tries {
				if ok, rem := allowRemaining(key); ok {
					got <- rem
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(got)
	var rems []int
	for r := range got {
		rems = append(rems, r)
	}
	slices.Sort(rems)
	return rems
}

// CappedAllowRemainingIsNone checks that a new key the key cap turns away
// reads, from AllowRemaining as from Take(key, 1), as a denial with no room:
// Remaining 0, not the whole limit of the fresh key it could not become.
// newLimiter must build a limiter capped at one key (pass
// hotlimit.WithMaxKeys(1) to Adapt); under a frozen clock, one request
// keeps the one key it holds from going idle.
func CappedAllowRemainingIsNone(t *testing.T, newLimiter Constructor) {
	now := int64(2 * time.Hour)
	l, err := newLimiter(3, time.Hour, func() int64 { return now })
	require.NoError(t, err)
	lim, ok := l.(remainingAllower)
	require.True(t, ok, "%T has AllowRemaining", l)
	require.True(t, lim.Allow("held"), "the one key the cap has room for, not idle for a while")
	d := lim.Take("new", 1)
	require.False(t, d.Allowed, "the cap turns the new key away")
	require.Zero(t, d.Remaining)
	allowed, remaining := lim.AllowRemaining("new")
	assert.False(t, allowed)
	assert.Zero(t, remaining, "as Take(key, 1) reports")
	assert.Equal(t, 1, lim.Len(), "the new key is not held")
}
