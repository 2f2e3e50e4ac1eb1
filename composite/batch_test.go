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

// newBatching returns a fixed window of limit a minute that is a
// hotlimit.Batcher, as redislimit's limiters are, recording its batches.
func newBatching(t *testing.T, limit int, batches *[]string) *limitertest.Batching {
	t.Helper()
	l, err := fixedwindow.New(limit, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	return &limitertest.Batching{Refunder: l, Conf: hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Minute}, Log: batches}
}

// TestBatchersAskedTogetherWhenTheFirstIsReached: the children that are
// hotlimit.Batchers are asked in one TakeBatch, when a take reaches the
// first of them: a child before it that denies leaves them unasked, as it
// leaves any child after it. A child between them that denies, and one of
// them that denies, has every child of the batch that took the request give
// it back, those after the denier too, as the children before it do.
func TestBatchersAskedTogetherWhenTheFirstIsReached(t *testing.T) {
	var batches []string
	first, between := newRemote(t, 10), newRemote(t, 2)
	a, b := newBatching(t, 5, &batches), newBatching(t, 3, &batches)
	c, err := composite.New(first, a, between, b)
	require.NoError(t, err)
	ctx := context.Background()
	state := func(key string) [4]int {
		return [4]int{first.Take(key, 0).Remaining, a.Take(key, 0).Remaining, between.Take(key, 0).Remaining, b.Take(key, 0).Remaining}
	}

	d, r, err := c.TakeReceiptContext(ctx, "k", 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 1, At: 1}, r)
	assert.Equal(t, []string{"take 2"}, batches, "a and b in one batch")
	assert.Equal(t, [4]int{9, 4, 1, 2}, state("k"))

	require.True(t, c.Take("k", 1).Allowed) // without a context: a batch all the same
	assert.Equal(t, []string{"take 2", "take 2"}, batches)
	assert.Equal(t, [4]int{8, 3, 0, 1}, state("k"))

	d, err = c.TakeContext(ctx, "k", 1) // between denies, after a and before b
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, []string{"take 2", "take 2", "take 2", "report 2, 2 given back"}, batches, "a and b gave it back and reported in one more batch")
	assert.Equal(t, [4]int{8, 3, 0, 1}, state("k"), "b, asked after the denier, gave it back too")

	require.True(t, first.Take("j", 10).Allowed)
	d, err = c.TakeContext(ctx, "j", 1)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, []string{"take 2", "take 2", "take 2", "report 2, 2 given back", "report 2"}, batches, "the first child denied: the batch was asked only for reports")
	assert.Equal(t, [4]int{0, 5, 2, 3}, state("j"))

	require.True(t, b.Take("i", 3).Allowed)
	d, err = c.TakeContext(ctx, "i", 1) // b denies, the last child
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 0, d.Remaining)
	assert.Equal(t, "report 1, 1 given back", batches[len(batches)-1], "a, not the denier")
	assert.Equal(t, [4]int{10, 5, 2, 0}, state("i"), "a and between gave it back")
}

// TestBatchLeavesOutSlidingLogsAndLoneBatchers: a sliding log (one that
// reports its Config as one, as redislimit's do) is asked on its own in its
// place, never in the batch, and a composite with a single Batcher other
// than its sliding logs asks it on its own too.
func TestBatchLeavesOutSlidingLogsAndLoneBatchers(t *testing.T) {
	var batches []string
	a, b := newBatching(t, 5, &batches), newBatching(t, 5, &batches)
	log := newBatching(t, 5, &batches)
	log.Conf.Algorithm = hotlimit.SlidingLog
	c, err := composite.New(a, log, b)
	require.NoError(t, err)
	require.True(t, c.Allow("k"))
	assert.Equal(t, []string{"take 2"}, batches, "a and b, not the log")
	assert.Equal(t, 4, log.Take("k", 0).Remaining)

	one, err := composite.New(newBatching(t, 5, &batches), log)
	require.NoError(t, err)
	require.True(t, one.Allow("k"))
	assert.Equal(t, []string{"take 2"}, batches, "no batch of one")
}

// TestPanicBetweenBatchersGivesBackTheBatch: when a child between two
// Batchers panics in its Take, both took the request in one batch, and
// both give it back on the way out. So does a composite nested between
// them whose own child panics, having given back its first child's request
// itself: that one is not given back twice.
func TestPanicBetweenBatchersGivesBackTheBatch(t *testing.T) {
	var batches []string
	a, b := newBatching(t, 5, &batches), newBatching(t, 5, &batches)
	panicky := funcLimiter(func(string, int) hotlimit.Decision { panic("panicky: take") })
	c, err := composite.New(a, panicky, b)
	require.NoError(t, err)
	require.PanicsWithValue(t, "panicky: take", func() { _, _ = c.TakeContext(context.Background(), "k", 2) })
	require.Equal(t, []string{"take 2"}, batches, "both took it")
	assert.Equal(t, 5, a.Take("k", 0).Remaining)
	assert.Equal(t, 5, b.Take("k", 0).Remaining)

	var calls atomic.Int64
	inner := newRemote(t, 5)
	require.True(t, inner.Take("j", 1).Allowed)
	nested, err := composite.New(inner, funcLimiter(func(string, int) hotlimit.Decision {
		calls.Add(1)
		panic("panicky: take")
	}))
	require.NoError(t, err)
	c, err = composite.New(a, nested, b)
	require.NoError(t, err)
	require.PanicsWithValue(t, "panicky: take", func() { c.Take("j", 2) })
	require.Equal(t, int64(1), calls.Load())
	assert.Equal(t, 5, a.Take("j", 0).Remaining)
	assert.Equal(t, 5, b.Take("j", 0).Remaining)
	assert.Equal(t, 4, inner.Take("j", 0).Remaining, "given back once: its earlier request stays")
}

// TestPanicInDenialsBatchGivesBackEveryChild: when the batch that gives
// back and reports on a denial panics (having given back its own children,
// as a Batcher must), the children asked in turn that took the request
// give it back too, and the panic goes on: the request counts nowhere.
func TestPanicInDenialsBatchGivesBackEveryChild(t *testing.T) {
	var batches []string
	first, denier := newRemote(t, 10), newRemote(t, 2)
	a, b := newBatching(t, 5, &batches), newBatching(t, 5, &batches)
	a.Before = func() {
		if batches[len(batches)-1] == "report 2, 2 given back" {
			panic("batch")
		}
	}
	c, err := composite.New(first, a, denier, b)
	require.NoError(t, err)
	for _, l := range []hotlimit.Limiter{first, a, denier, b} {
		require.True(t, l.Allow("k")) // held, so that a give-back made twice shows
	}
	require.PanicsWithValue(t, "batch", func() { _, _ = c.TakeContext(context.Background(), "k", 2) })
	assert.Equal(t, []string{"take 2", "report 2, 2 given back"}, batches)
	for name, l := range map[string]hotlimit.Limiter{"first": first, "a": a, "b": b} {
		want := 4
		if l == first {
			want = 9
		}
		assert.Equal(t, want, l.Take("k", 0).Remaining, name)
	}
}
