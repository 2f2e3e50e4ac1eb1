package composite_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestAskerTellsAWaitLeavingNothingCounted: an Asker tells how long a
// request of n waits before its limiter admits it, for every kind of
// limiter, alone and inside a composite, for one request and for several,
// and leaves the limiter as a twin that was never asked; for a request its
// limiter admits now, it waits nothing, the limiter given it back. The
// zero Asker, and the Asker of nil, ask nothing, nor does any for n < 1.
func TestAskerTellsAWaitLeavingNothingCounted(t *testing.T) {
	eachKindNested(t, func(t *testing.T, k kind, nest bool) {
		var now atomic.Int64
		now.Store(int64(1000 * time.Hour)) // on every window's boundary
		lim, twin := k.make(t, 2, time.Minute, now.Load), k.make(t, 2, time.Minute, now.Load)
		asked := hotlimit.Refunder(lim)
		if nest {
			asked = nested(t, k.make(t, 100, time.Second, now.Load), lim)
		}
		a := composite.NewAsker(asked, false)
		for _, n := range []int{1, 2} {
			w, err := a.Ask(context.Background(), "k", n)
			require.NoError(t, err)
			assert.Zero(t, w, "n = %d: a fresh key admits it now", n)
		}
		assert.Equal(t, twin.Take("k", 0), lim.Take("k", 0), "given back")

		require.True(t, lim.Take("k", 2).Allowed)
		require.True(t, twin.Take("k", 2).Allowed)
		now.Add(int64(10 * time.Second))
		for _, n := range []int{1, 2} {
			w, err := a.Ask(nil, "k", n) // asked without a context, as Take asks
			require.NoError(t, err)
			want := twin.Take("k", n)
			require.False(t, want.Allowed)
			assert.Equal(t, want.RetryAfter, w, "n = %d: the twin's wait", n)
		}
		assert.Equal(t, twin.Take("k", 0), lim.Take("k", 0), "nothing counted")
	})

	log := kinds[4].make(t, 1, time.Minute, func() int64 { return 0 })
	require.True(t, log.Allow("k"))
	for _, n := range []int{0, -1} {
		w, err := composite.NewAsker(log, false).Ask(context.Background(), "k", n)
		assert.NoError(t, err)
		assert.Zero(t, w, "n = %d asks nothing", n)
	}
	w, err := composite.Asker{}.Ask(context.Background(), "k", 1)
	assert.NoError(t, err)
	assert.Zero(t, w, "the zero Asker")
	w, err = composite.NewAsker(nil, true).Ask(context.Background(), "k", 1)
	assert.NoError(t, err)
	assert.Zero(t, w, "the Asker of nil")
	w, err = composite.NewAsker((*tokenbucket.Limiter)(nil), false).Ask(context.Background(), "k", 1)
	assert.NoError(t, err)
	assert.Zero(t, w, "the Asker of a nil pointer")
}
