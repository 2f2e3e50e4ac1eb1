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
)

// batching is a fixed window that is a hotlimit.Batcher, as redislimit's
// limiters are: TakeBatch decides each take by its Limiter, records how
// many takes each of its calls held in batches (shared by the batchings of
// a test), and log makes it report its Config as a sliding log's.
type batching struct {
	*fixedwindow.Limiter
	batches *[]int
	log     bool
}

func newBatching(t *testing.T, limit int, batches *[]int) *batching {
	t.Helper()
	l, err := fixedwindow.New(limit, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	return &batching{Limiter: l, batches: batches}
}

func (b *batching) Config() hotlimit.Config {
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: b.Burst(), Window: time.Minute}
	if b.log {
		c.Algorithm = hotlimit.SlidingLog
	}
	return c
}

func (b *batching) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r := b.TakeReceipt(key, n)
	return d, r, nil
}

func (b *batching) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	b.Refund(key, r)
	return nil
}

func (b *batching) TakeBatch(ctx context.Context, takes []hotlimit.BatchTake) {
	*b.batches = append(*b.batches, len(takes))
	for i := range takes {
		t := &takes[i]
		t.Decision, t.Receipt, t.Err = t.Limiter.TakeReceiptContext(ctx, t.Key, t.N)
	}
}

// Batches sends every batching's take with b's own.
func (b *batching) Batches(l hotlimit.ContextRefunder) bool {
	_, ok := l.(*batching)
	return ok
}

var _ hotlimit.Batcher = (*batching)(nil)

// TestBatchersAskedTogetherWhenTheFirstIsReached: the children that are
// hotlimit.Batchers are asked in one TakeBatch, when a take reaches the
// first of them: a child before it that denies leaves them unasked, as it
// leaves any child after it. A child between them that denies, and one of
// them that denies, has every child of the batch that took the request give
// it back, those after the denier too, as the children before it do.
func TestBatchersAskedTogetherWhenTheFirstIsReached(t *testing.T) {
	var batches []int
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
	assert.Equal(t, []int{2}, batches, "a and b in one batch")
	assert.Equal(t, [4]int{9, 4, 1, 2}, state("k"))

	require.True(t, c.Take("k", 1).Allowed) // without a context: a batch all the same
	assert.Equal(t, []int{2, 2}, batches)
	assert.Equal(t, [4]int{8, 3, 0, 1}, state("k"))

	d, err = c.TakeContext(ctx, "k", 1) // between denies, after a and before b
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, []int{2, 2, 2}, batches)
	assert.Equal(t, [4]int{8, 3, 0, 1}, state("k"), "b, asked after the denier, gave it back too")

	require.True(t, first.Take("j", 10).Allowed)
	d, err = c.TakeContext(ctx, "j", 1)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, []int{2, 2, 2}, batches, "the first child denied: the batch was not asked")
	assert.Equal(t, [4]int{0, 5, 2, 3}, state("j"))

	require.True(t, b.Take("i", 3).Allowed)
	d, err = c.TakeContext(ctx, "i", 1) // b denies, the last child
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 0, d.Remaining)
	assert.Equal(t, [4]int{10, 5, 2, 0}, state("i"), "a and between gave it back")
}

// TestBatchLeavesOutSlidingLogsAndLoneBatchers: a sliding log (one that
// reports its Config as one, as redislimit's do) is asked on its own in its
// place, never in the batch, and a composite with a single Batcher other
// than its sliding logs asks it on its own too.
func TestBatchLeavesOutSlidingLogsAndLoneBatchers(t *testing.T) {
	var batches []int
	a, b := newBatching(t, 5, &batches), newBatching(t, 5, &batches)
	log := newBatching(t, 5, &batches)
	log.log = true
	c, err := composite.New(a, log, b)
	require.NoError(t, err)
	require.True(t, c.Allow("k"))
	assert.Equal(t, []int{2}, batches, "a and b, not the log")
	assert.Equal(t, 4, log.Take("k", 0).Remaining)

	one, err := composite.New(newBatching(t, 5, &batches), log)
	require.NoError(t, err)
	require.True(t, one.Allow("k"))
	assert.Equal(t, []int{2}, batches, "no batch of one")
}

// TestPanicBetweenBatchersGivesBackTheBatch: when a child between two
// Batchers panics in its Take, both took the request in one batch, and
// both give it back on the way out. So does a composite nested between
// them whose own child panics, having given back its first child's request
// itself: that one is not given back twice.
func TestPanicBetweenBatchersGivesBackTheBatch(t *testing.T) {
	var batches []int
	a, b := newBatching(t, 5, &batches), newBatching(t, 5, &batches)
	panicky := funcLimiter(func(string, int) hotlimit.Decision { panic("panicky: take") })
	c, err := composite.New(a, panicky, b)
	require.NoError(t, err)
	require.PanicsWithValue(t, "panicky: take", func() { _, _ = c.TakeContext(context.Background(), "k", 2) })
	require.Equal(t, []int{2}, batches, "both took it")
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
