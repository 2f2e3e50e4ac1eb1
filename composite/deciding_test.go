package composite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// spent returns a fixed window of limit 1 under a frozen clock whose key k
// has spent its one request: it denies k, a decision it made.
func spent(t *testing.T) *fixedwindow.Limiter {
	t.Helper()
	l, err := fixedwindow.New(1, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	require.True(t, l.Allow("k"))
	return l
}

// TestDecidingErrorOfARealDenialBesideAFailingChild: a denial by a child
// that decided is a quota spent, even when a child on an unreachable
// backend failed beside it (its failure policy passed before the denier, or
// it was asked for its state after): the composite's error still wraps the
// backend's, but DecidingError says no child's failure made the decision.
// So also for a composite nested in another, and for a request of more
// than a child's burst, which the composite itself denies.
func TestDecidingErrorOfARealDenialBesideAFailingChild(t *testing.T) {
	ctx := context.Background()
	for name, children := range map[string]func() []hotlimit.Limiter{
		"failing before":  func() []hotlimit.Limiter { return []hotlimit.Limiter{&limitertest.UnreachableRefunder{}, spent(t)} },
		"failing after":   func() []hotlimit.Limiter { return []hotlimit.Limiter{spent(t), &limitertest.UnreachableRefunder{}} },
		"counting before": func() []hotlimit.Limiter { return []hotlimit.Limiter{newRemoteFailingRefund(t), spent(t)} },
	} {
		c, err := composite.New(children()...)
		require.NoError(t, err)
		d, err := c.TakeContext(ctx, "k", 1)
		assert.False(t, d.Allowed, name)
		assert.True(t, errors.Is(err, errBackend) || errors.Is(err, limitertest.ErrUnreachable), name+": the failure is reported: %v", err)
		assert.NoError(t, composite.DecidingError(err), name+": the denier decided")

		outer, err := composite.New(c, newRemote(t, 5))
		require.NoError(t, err)
		d, err = outer.TakeContext(ctx, "k", 1)
		assert.False(t, d.Allowed, name)
		assert.Error(t, err, name)
		assert.NoError(t, composite.DecidingError(err), name+": nested, the denier decided")
	}

	c, err := composite.New(&limitertest.UnreachableRefunder{}, newRemote(t, 1))
	require.NoError(t, err)
	d, err := c.TakeContext(ctx, "k", 2)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.ErrorIs(t, err, limitertest.ErrUnreachable)
	assert.NoError(t, composite.DecidingError(err), "more than the burst: the composite denied")
}

// TestDecidingErrorOfAFailurePolicysDecision: when the child that could not
// decide made the decision (its failure policy denied, in a take or a
// report, or passed), DecidingError keeps its error; any other error is
// returned as it is.
func TestDecidingErrorOfAFailurePolicysDecision(t *testing.T) {
	ctx := context.Background()
	closed := &limitertest.UnreachableRefunder{Closed: true}
	counting := newRemote(t, 5)
	c, err := composite.New(counting, closed)
	require.NoError(t, err)
	d, err := c.TakeContext(ctx, "k", 1)
	assert.False(t, d.Allowed)
	assert.ErrorIs(t, composite.DecidingError(err), limitertest.ErrUnreachable, "the failure policy denied")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "and the other child gave back")

	d, err = c.TakeContext(ctx, "k", 0)
	assert.False(t, d.Allowed)
	assert.ErrorIs(t, composite.DecidingError(err), limitertest.ErrUnreachable, "a report the failure policy denies")

	open, err := composite.New(newRemote(t, 5), &limitertest.UnreachableRefunder{})
	require.NoError(t, err)
	d, err = open.TakeContext(ctx, "k", 1)
	assert.True(t, d.Allowed)
	assert.ErrorIs(t, composite.DecidingError(err), limitertest.ErrUnreachable, "the failure policy passed")

	outer, err := composite.New(newRemote(t, 5), c)
	require.NoError(t, err)
	d, err = outer.TakeContext(ctx, "k", 1)
	assert.False(t, d.Allowed)
	assert.ErrorIs(t, composite.DecidingError(err), limitertest.ErrUnreachable, "nested, the failure policy denied")

	assert.NoError(t, composite.DecidingError(nil))
	assert.Same(t, errBackend, composite.DecidingError(errBackend))
}

// newRemoteFailingRefund is a remote child that counts, with its backend
// failing only when it gives back.
func newRemoteFailingRefund(t *testing.T) hotlimit.Limiter {
	r := newRemote(t, 5)
	return &failingRefund{r}
}

type failingRefund struct{ *remote }

func (f *failingRefund) RefundContext(ctx context.Context, key string, rc hotlimit.Receipt) error {
	f.remote.Refund(key, rc)
	return errBackend
}

// quiet is a fixed window that takes a context and never fails, as a
// limiter on a backend that answers does.
type quiet struct{ *fixedwindow.Limiter }

func (q *quiet) TakeContext(_ context.Context, key string, n int) (hotlimit.Decision, error) {
	return q.Take(key, n), nil
}

func (q *quiet) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r := q.TakeReceipt(key, n)
	return d, r, nil
}

func (q *quiet) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	q.Refund(key, r)
	return nil
}

// TestAllocsOfEveryPathWithoutAContext: Allow, Take, TakeReceipt and Refund
// allocate nothing on any path (a pass and its refund, a denial that gives
// back, a request of more than the burst, a report, n < 0), also with
// children that take a context, which they ask without one; nor does
// TakeContext on a pass or a report when no child fails.
func TestAllocsOfEveryPathWithoutAContext(t *testing.T) {
	clock := func() int64 { return 42 }
	wide, err := fixedwindow.New(1<<20, time.Minute, hotlimit.WithClock(clock))
	require.NoError(t, err)
	remote, err := fixedwindow.New(1<<20, time.Minute, hotlimit.WithClock(clock))
	require.NoError(t, err)
	tight, err := fixedwindow.New(3, time.Minute, hotlimit.WithClock(clock))
	require.NoError(t, err)
	denying, err := composite.New(wide, &quiet{remote}, tight)
	require.NoError(t, err)
	passing, err := composite.New(wide, &quiet{remote})
	require.NoError(t, err)
	require.True(t, denying.Take("k", 3).Allowed)
	require.True(t, passing.Take("k", 1).Allowed)
	before := wide.Take("k", 0).Remaining
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		denying.Allow("k")    // denied by tight, given back by the others
		denying.Take("k", 2)  // so
		denying.Take("k", 10) // more than the burst
		denying.Take("k", 0)  // a report
		denying.Take("k", -1) // never
		_, r := passing.TakeReceipt("k", 2)
		passing.Refund("k", r)
	}))
	assert.Equal(t, before, wide.Take("k", 0).Remaining, "every request was given back")
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = passing.TakeContext(ctx, "k", 0)
		_, r, _ := passing.TakeReceiptContext(ctx, "k", 1)
		_ = passing.RefundContext(ctx, "k", r)
	}))
}
