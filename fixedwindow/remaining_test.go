package fixedwindow_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, Allowed and Remaining, on twin limiters under random clock steps
// (some backwards), sweeps and several keys.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, limit := range []int{1, 7, 20} {
		var now atomic.Int64
		now.Store(int64(time.Hour))
		opts := []hotlimit.Option{hotlimit.WithClock(now.Load)}
		a, err := fixedwindow.New(limit, 10*ms, opts...)
		require.NoError(t, err)
		b, err := fixedwindow.New(limit, 10*ms, opts...)
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(1, uint64(limit)))
		allowed, denied := 0, 0
		for i := range 5000 {
			step := r.Int64N(int64(ms)) // windows of 10 ms: denials too
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
		assert.Positive(t, allowed, "limit %d", limit)
		assert.Positive(t, denied, "limit %d", limit)
	}
}

func TestAllowRemainingDoesNotAllocate(t *testing.T) {
	var now atomic.Int64
	lim, err := fixedwindow.New(100, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	lim.AllowRemaining("k")
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.AllowRemaining("k") }))
}
