package composite_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestBadInputToTheZeroComposite: the zero Limiter has no child and admits
// nothing, as its doc says. Its Take of a negative count was Allowed, the
// report of no child at all, where every Limiter denies n < 0 with
// RetryAfter Never.
func TestBadInputToTheZeroComposite(t *testing.T) {
	ctx := context.Background()
	never := hotlimit.Decision{RetryAfter: hotlimit.Never}
	cases := []struct {
		name string
		n    int
		want hotlimit.Decision
	}{
		{"n=MinInt", math.MinInt, never},
		{"n=-1", -1, never},
		{"n=0 reports", 0, hotlimit.Decision{Allowed: true}},
		{"n=1", 1, never},
		{"n=MaxInt", math.MaxInt, never},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l composite.Limiter
			assert.Equal(t, tc.want, l.Take("k", tc.n))
			d, r := l.TakeReceipt("k", tc.n)
			assert.Equal(t, tc.want, d)
			assert.Zero(t, r)
			d, err := l.TakeContext(ctx, "k", tc.n)
			assert.NoError(t, err)
			assert.Equal(t, tc.want, d)
			d, r, err = l.TakeReceiptContext(nil, "k", tc.n) //lint:ignore SA1012 a nil context is what is tested
			assert.NoError(t, err)
			assert.Equal(t, tc.want, d)
			assert.Zero(t, r)
		})
	}
	var l composite.Limiter
	assert.False(t, l.Allow("k"))
	assert.Zero(t, l.Len())
	assert.Zero(t, l.Sweep())
	assert.Zero(t, l.Burst())
	l.Refund("k", hotlimit.Receipt{N: 1})
	assert.NoError(t, l.RefundContext(ctx, "k", hotlimit.Receipt{N: math.MaxInt, At: math.MinInt64}))
	assert.False(t, composite.UsesContext(&l))
}

// TestBadInputToComposite gives New, a composite and an Asker what a
// careless caller could, and checks each documented outcome.
func TestBadInputToComposite(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	tb := func(t *testing.T) *tokenbucket.Limiter {
		l, err := tokenbucket.New(2, time.Minute)
		require.NoError(t, err)
		return l
	}
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"New of no child is refused", func(t *testing.T) {
			_, err := composite.New()
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		}},
		{"New of a nil child is refused", func(t *testing.T) {
			_, err := composite.New(tb(t), nil)
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		}},
		{"New of a typed nil child is refused", func(t *testing.T) {
			_, err := composite.New((*tokenbucket.Limiter)(nil))
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		}},
		{"New of more than MaxChildren is refused", func(t *testing.T) {
			kids := make([]hotlimit.Limiter, composite.MaxChildren+1)
			for i := range kids {
				kids[i] = tb(t)
			}
			_, err := composite.New(kids...)
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		}},
		{"counts out of range are denied", func(t *testing.T) {
			sl, err := slidinglog.New(2, time.Minute)
			require.NoError(t, err)
			l, err := composite.New(tb(t), sl)
			require.NoError(t, err)
			for _, n := range []int{math.MinInt, -1, 3, math.MaxInt} {
				d := l.Take("\xff", n)
				assert.False(t, d.Allowed, "n=%d", n)
				assert.Equal(t, hotlimit.Never, d.RetryAfter, "n=%d", n)
			}
			assert.Equal(t, 2, l.Take("\xff", 0).Remaining, "nothing was taken")
		}},
		{"a nil or canceled context decides in memory", func(t *testing.T) {
			l, err := composite.New(tb(t))
			require.NoError(t, err)
			d, err := l.TakeContext(nil, "k", 1) //lint:ignore SA1012 a nil context is what is tested
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
			d, err = l.TakeContext(canceled, "k", 1)
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
			assert.NoError(t, l.RefundContext(nil, "k", hotlimit.Receipt{N: math.MaxInt, At: math.MinInt64})) //lint:ignore SA1012 a nil context is what is tested
			assert.LessOrEqual(t, l.Take("k", 0).Remaining, 2, "a made-up refund gives back no more than the quota")
		}},
		{"UsesContext and DecidingError of nil", func(t *testing.T) {
			assert.False(t, composite.UsesContext(nil))
			assert.False(t, composite.UsesContext((*tokenbucket.Limiter)(nil)))
			assert.NoError(t, composite.DecidingError(nil))
		}},
		{"an Asker of nothing asks nothing", func(t *testing.T) {
			for _, a := range []composite.Asker{{}, composite.NewAsker(nil, true), composite.NewAsker((*tokenbucket.Limiter)(nil), false)} {
				w, err := a.Ask(nil, "k", math.MaxInt) //lint:ignore SA1012 a nil context is what is tested
				assert.NoError(t, err)
				assert.Zero(t, w)
			}
		}},
		{"an Asker of counts out of range", func(t *testing.T) {
			a := composite.NewAsker(tb(t), false)
			for _, n := range []int{math.MinInt, -1, 0} {
				w, err := a.Ask(ctx, "k", n)
				assert.NoError(t, err)
				assert.Zero(t, w, "n=%d asks nothing", n)
			}
			w, err := a.Ask(ctx, "k", math.MaxInt)
			assert.NoError(t, err)
			assert.Equal(t, hotlimit.Never, w)
		}},
		{"a nil composite panics, as its doc says", func(t *testing.T) {
			var l *composite.Limiter
			assert.Panics(t, func() { l.Allow("k") })
			assert.Panics(t, func() { l.Take("k", 1) })
			assert.Panics(t, func() { l.Len() })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.NotPanics(t, func() { tc.check(t) }) })
	}
}
