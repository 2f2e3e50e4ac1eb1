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
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestNestedCompositeDenialGivesBackEveryChildThatCounted: a composite
// nested in another counts nothing for a request the other denies, as the
// same children side by side in one composite do. Its children are given
// back each with its own receipt: one that admitted without counting
// (down, as a limiter on a backend that is out of reach) takes nothing
// back, and one that counted gets the request back, even though the
// nested composite's own receipt is the zero Receipt.
func TestNestedCompositeDenialGivesBackEveryChildThatCounted(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			counting := k.make(t, 10, time.Hour, now.Load)
			down := &uncounting{Refunder: k.make(t, 10, time.Hour, now.Load), down: true}
			tight := k.make(t, 2, time.Hour, now.Load)
			inner, err := composite.New(down, counting)
			require.NoError(t, err)
			outer, err := composite.New(inner, tight)
			require.NoError(t, err)

			require.True(t, outer.Take("k", 2).Allowed)
			require.Equal(t, 8, counting.Take("k", 0).Remaining)
			d := outer.Take("k", 1)
			require.False(t, d.Allowed, "tight has no request left")
			assert.Equal(t, 8, counting.Take("k", 0).Remaining, "the denied request is given back by the nested composite's child that counted it")
			assert.Equal(t, 10, down.Refunder.Take("k", 0).Remaining, "the child that counted nothing takes nothing back")
		})
	}
}

// TestNestedCompositeDenialGivesBackEachChildAtItsOwnTime: children of a
// nested composite on clocks far apart (a limit on a backend reads the
// backend's time) each get a denied request back in full, as they do side
// by side in one composite, where each is given back with its own receipt.
// The nested composite's receipt holds the earliest of their times, whose
// window a fixed window, a sliding counter or a sliding log on the later
// clock finds long ended: it would take nothing back.
func TestNestedCompositeDenialGivesBackEachChildAtItsOwnTime(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var early, late atomic.Int64
			early.Store(int64(time.Hour))
			late.Store(int64(100 * time.Hour))
			first := k.make(t, 10, time.Minute, early.Load)
			second := k.make(t, 10, time.Minute, late.Load)
			tight := k.make(t, 2, time.Minute, early.Load)
			inner, err := composite.New(first, second)
			require.NoError(t, err)
			outer, err := composite.New(inner, tight)
			require.NoError(t, err)

			require.True(t, outer.Take("k", 2).Allowed)
			require.False(t, outer.Take("k", 1).Allowed, "tight has no request left")
			assert.Equal(t, 8, first.Take("k", 0).Remaining, "given back")
			assert.Equal(t, 8, second.Take("k", 0).Remaining, "given back at its own time")
		})
	}
}

// TestTakeContextNestedCompositeGivesBackEachChild: a child that is a
// composite one of whose children counted nothing (its backend failed,
// its failure policy passed) gives the zero Receipt; when the request then
// ends while another child could not decide, every child that counted it
// gives it back, the nested composite's too, as they would side by side
// in one composite.
func TestTakeContextNestedCompositeGivesBackEachChild(t *testing.T) {
	counting, beside := newRemote(t, 5), newRemote(t, 5)
	inner, err := composite.New(counting, &limitertest.UnreachableRefunder{})
	require.NoError(t, err)
	leaving := &limitertest.CancelingRefunder{}
	outer, err := composite.New(beside, inner, leaving)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	leaving.Cancel = cancel
	d, rc, err := outer.TakeReceiptContext(ctx, "k", 2)
	assert.True(t, d.Allowed, "the failure policies passed")
	assert.Zero(t, rc)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 5, beside.Take("k", 0).Remaining, "given back")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "given back by the nested composite")
	assert.Len(t, counting.refunds, 1, "once")
}

// TestNestedCompositeEndedWithinGivesBackOnce: the request ends within
// the nested composite, while its own child could not decide: the nested
// composite gives back what its children took, and the outer composite,
// whose other child took too, gives that back without giving the nested
// composite's children anything a second time.
func TestNestedCompositeEndedWithinGivesBackOnce(t *testing.T) {
	counting, beside := newRemote(t, 5), newRemote(t, 5)
	leaving := &limitertest.CancelingRefunder{}
	inner, err := composite.New(counting, &limitertest.UnreachableRefunder{}, leaving)
	require.NoError(t, err)
	outer, err := composite.New(beside, inner)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	leaving.Cancel = cancel
	d, _, err := outer.TakeReceiptContext(ctx, "k", 2)
	assert.True(t, d.Allowed, "the failure policies passed")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 5, beside.Take("k", 0).Remaining, "given back")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "given back")
	assert.Len(t, counting.refunds, 1, "once")
}

// TestNestedCompositeAllocatesNothing: a denial that gives back through a
// nested composite allocates nothing, as one through a flat composite.
func TestNestedCompositeAllocatesNothing(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	a, b, tight := kinds[0].make(t, 100, time.Hour, now.Load), kinds[2].make(t, 100, time.Hour, now.Load), kinds[3].make(t, 1, time.Hour, now.Load)
	inner, err := composite.New(a, b)
	require.NoError(t, err)
	outer, err := composite.New(inner, tight)
	require.NoError(t, err)
	require.True(t, outer.Allow("k"))
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		outer.Allow("k")
		_, _ = outer.TakeContext(ctx, "k", 1)
	}))
	assert.Equal(t, 99, a.Take("k", 0).Remaining, "every denial was given back")
}

// TestNestedCompositesAllocateOnlyPastMaxChildrenLeaves: the package
// documentation says a Take allocates nothing on keys the children hold but
// for composites holding more than MaxChildren limiters in all, whose Take
// allocates the receipts it keeps. Nested composites of MaxChildren leaves in
// all allocate nothing, allowed or denied; of one more, one allocation.
func TestNestedCompositesAllocateOnlyPastMaxChildrenLeaves(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return 42 })
	leaf := func(limit int) hotlimit.Limiter {
		l, err := fixedwindow.New(limit, time.Minute, clock)
		require.NoError(t, err)
		return l
	}
	// nested holds leaves limiters in all, in inner composites of at most
	// 8, the last of them a limit of 1 when tight, drained.
	nested := func(leaves int, tight bool) *composite.Limiter {
		var all []hotlimit.Limiter
		for i := range leaves {
			all = append(all, leaf(1<<20-i))
		}
		if tight {
			all[leaves-1] = leaf(1)
		}
		var kids []hotlimit.Limiter
		for len(all) > 0 {
			n := min(8, len(all))
			c, err := composite.New(all[:n]...)
			require.NoError(t, err)
			kids, all = append(kids, c), all[n:]
		}
		outer, err := composite.New(kids...)
		require.NoError(t, err)
		require.True(t, outer.Allow("k"))
		return outer
	}
	for _, tc := range []struct {
		leaves int
		allocs float64
	}{
		{composite.MaxChildren, 0},
		{composite.MaxChildren + 1, 1},
	} {
		allowed, denied := nested(tc.leaves, false), nested(tc.leaves, true)
		assert.Equal(t, tc.allocs, testing.AllocsPerRun(100, func() {
			d, r := allowed.TakeReceipt("k", 1)
			require.True(t, d.Allowed)
			allowed.Refund("k", r)
		}), "%d leaves, allowed", tc.leaves)
		assert.Equal(t, tc.allocs, testing.AllocsPerRun(100, func() {
			require.False(t, denied.Take("k", 1).Allowed)
		}), "%d leaves, denied", tc.leaves)
	}
}

// TestNestedCompositeGiveBackUnderAContextAllocatesNothing: TakeContext's
// denial gives back the children of a nested composite that take a
// context (redislimit's) under a context that can never be cancelled
// without allocating, and under one that can be with one context for the
// whole give-back, however many children it reaches: not one per child.
func TestNestedCompositeGiveBackUnderAContextAllocatesNothing(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return 42 })
	remote := func(limit int) *quiet {
		l, err := fixedwindow.New(limit, time.Minute, clock)
		require.NoError(t, err)
		return &quiet{l}
	}
	a, b, c, tight := remote(1<<20), remote(1<<20), remote(1<<20), remote(1)
	inner, err := composite.New(a, b, c)
	require.NoError(t, err)
	outer, err := composite.New(inner, tight)
	require.NoError(t, err)
	require.True(t, outer.Allow("k"))
	before := a.Take("k", 0).Remaining

	background := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		d, _ := outer.TakeContext(background, "k", 1)
		assert.False(t, d.Allowed)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		d, _ := outer.TakeContext(ctx, "k", 1)
		assert.False(t, d.Allowed)
	}), 1.0, "one context for the give-back")
	assert.Equal(t, before, a.Take("k", 0).Remaining, "every denial was given back")
	assert.Equal(t, before, c.Take("k", 0).Remaining, "every denial was given back")
}

var _ hotlimit.Refunder = (*uncounting)(nil)
