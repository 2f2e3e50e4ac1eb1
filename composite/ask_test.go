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
	"github.com/hotlimit/hotlimit/internal/limitertest"
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
			//lint:ignore SA1012 asked without a context on purpose
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

// localFallback is a limiter on a backend that decides under a context,
// whose failure policy decides with a limiter in memory, as redislimit's
// FailLocal does: once the context has ended it takes from that limiter,
// and gives the zero Receipt, so that nothing it took then can be given
// back.
type localFallback struct{ local *tokenbucket.Limiter }

func (l localFallback) Allow(key string) bool                    { return l.Take(key, 1).Allowed }
func (l localFallback) Take(key string, n int) hotlimit.Decision { return l.local.Take(key, n) }
func (l localFallback) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return l.local.TakeReceipt(key, n)
}
func (l localFallback) Refund(key string, r hotlimit.Receipt) { l.local.Refund(key, r) }
func (l localFallback) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return l.local.Take(key, n), hotlimit.Receipt{}, err
	}
	d, r := l.local.TakeReceipt(key, n)
	return d, r, nil
}
func (l localFallback) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	l.local.Refund(key, r)
	return nil
}

// TestAskerUnderAnEndedContextCountsNothing: an Asker asked under a context
// that has ended does not ask a limiter that decides with one
// (composite.UsesContext), alone or inside a composite: it could only fail,
// and a failure policy that decides in memory, as redislimit's FailLocal,
// counted the question there with no receipt to give it back by, spending
// the key's quota (two questions spent a limit of 2). It waits nothing and
// says why, with the context's error; the limiter is as it was. A context
// past its deadline has ended, though its timer has not run yet.
func TestAskerUnderAnEndedContextCountsNothing(t *testing.T) {
	local, err := tokenbucket.New(2, time.Hour)
	require.NoError(t, err)
	remote := localFallback{local}
	memory, err := tokenbucket.New(100, time.Hour)
	require.NoError(t, err)
	holding, err := composite.New(memory, remote)
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	// Past its deadline, its timer not yet run: its Err still reads nil.
	late := limitertest.PastDeadline(context.Background())
	for _, ended := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {late, context.DeadlineExceeded}} {
		for _, r := range []hotlimit.Refunder{remote, holding} {
			for _, log := range []bool{false, true} {
				a := composite.NewAsker(r, log)
				for range 3 {
					w, err := a.Ask(ended.ctx, "k", 1)
					assert.ErrorIs(t, err, ended.want, "%T log %v", r, log)
					assert.Zero(t, w, "%T log %v", r, log)
				}
				assert.Equal(t, 2, local.Take("k", 0).Remaining, "%v, %T log %v: nothing counted", ended.want, r, log)
				assert.Equal(t, 100, memory.Take("k", 0).Remaining, "%v, %T log %v: nothing counted", ended.want, r, log)
			}
		}
	}
}

// TestAskerGivesACompositesChildrenBackTheirOwnReceipts: a composite whose
// children read clocks apart, asked for a request it admits (its state
// changed since it was known to deny), gives each child back its own
// receipt, alone and nested in another composite, with and without a
// context: each child is then as a twin that was never asked. The
// composite's own receipt, at the earliest of their times, would give the
// child on the later clock back less than it took: a full bucket left
// empty for half a minute.
func TestAskerGivesACompositesChildrenBackTheirOwnReceipts(t *testing.T) {
	var early, late atomic.Int64 // the children's clocks
	bucket := func(clock func() int64) *tokenbucket.Limiter {
		l, err := tokenbucket.New(1, time.Minute, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return l
	}
	a, b := bucket(early.Load), bucket(late.Load)
	twinA, twinB := bucket(early.Load), bucket(late.Load)
	c, err := composite.New(a, b)
	require.NoError(t, err)
	outer, err := composite.New(c)
	require.NoError(t, err)
	require.True(t, c.Allow("k"))
	require.True(t, twinA.Allow("k"))
	require.True(t, twinB.Allow("k"))
	early.Store(int64(60 * time.Second)) // both full again, at times apart
	late.Store(int64(90 * time.Second))
	for _, asked := range []*composite.Limiter{c, outer} {
		for _, ctx := range []context.Context{nil, context.Background()} {
			w, err := composite.NewAsker(asked, false).Ask(ctx, "k", 1)
			require.NoError(t, err)
			assert.Zero(t, w, "it admits the request now")
			assert.Equal(t, twinA.Take("k", 0), a.Take("k", 0), "the child on the early clock")
			assert.Equal(t, twinB.Take("k", 0), b.Take("k", 0), "the child on the late clock")
		}
	}
}
