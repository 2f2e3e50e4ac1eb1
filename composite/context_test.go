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

// ctxKey is the key of the value the tests put in a context, to tell it
// from any other.
type ctxKey struct{}

// remote is a fixed window that takes a context, as a limiter on a backend
// does: it counts as the fixed window, and records the context of each call
// and whether it was one of the calls that take a context. fail makes its
// takes fail as a backend that cannot decide: its failure policy passes,
// counting nothing, with errBackend.
type remote struct {
	*fixedwindow.Limiter
	takes, refunds []context.Context // nil where asked without a context
	fail           bool
}

var errBackend = errors.New("backend down")

func newRemote(t *testing.T, limit int) *remote {
	t.Helper()
	l, err := fixedwindow.New(limit, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	return &remote{Limiter: l}
}

func (r *remote) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	r.takes = append(r.takes, nil)
	return r.Limiter.TakeReceipt(key, n)
}

func (r *remote) Refund(key string, rc hotlimit.Receipt) {
	r.refunds = append(r.refunds, nil)
	r.Limiter.Refund(key, rc)
}

func (r *remote) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := r.TakeReceiptContext(ctx, key, n)
	return d, err
}

func (r *remote) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	r.takes = append(r.takes, ctx)
	if r.fail {
		return hotlimit.Decision{Allowed: true, Limit: 1}, hotlimit.Receipt{}, errBackend
	}
	d, rc := r.Limiter.TakeReceipt(key, n)
	return d, rc, nil
}

func (r *remote) RefundContext(ctx context.Context, key string, rc hotlimit.Receipt) error {
	r.refunds = append(r.refunds, ctx)
	if r.fail {
		return errBackend
	}
	r.Limiter.Refund(key, rc)
	return nil
}

// TestTakeContextAsksTheChildrenThatTakeOneUnderIt: a composite's
// TakeContext asks the children that take a context under the caller's,
// and TakeReceipt asks them without one.
func TestTakeContextAsksTheChildrenThatTakeOneUnderIt(t *testing.T) {
	a, b := newRemote(t, 5), newRemote(t, 5)
	c, err := composite.New(a, b)
	require.NoError(t, err)
	var _ hotlimit.ContextRefunder = c

	ctx := context.WithValue(context.Background(), ctxKey{}, "request")
	d, err := c.TakeContext(ctx, "k", 2)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 3, d.Remaining)
	for _, r := range []*remote{a, b} {
		require.Len(t, r.takes, 1)
		require.NotNil(t, r.takes[0], "asked with a context")
		assert.Equal(t, "request", r.takes[0].Value(ctxKey{}), "the caller's context")
	}

	d, _ = c.TakeReceipt("k", 1)
	assert.True(t, d.Allowed)
	assert.Nil(t, a.takes[1], "TakeReceipt asks without a context")
	assert.Nil(t, b.takes[1], "TakeReceipt asks without a context")
}

// TestTakeContextDenialGivesBackUnderTheContextWithoutItsCancellation: when
// a later child denies, an earlier child that takes a context gives back
// under the caller's context without its cancellation, even though the
// caller's context has ended meanwhile: what it took comes back.
func TestTakeContextDenialGivesBackUnderTheContextWithoutItsCancellation(t *testing.T) {
	first := newRemote(t, 5)
	denier, err := fixedwindow.New(3, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	require.True(t, denier.Take("k", 2).Allowed)
	c, err := composite.New(first, denier)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "request"))
	cancel() // the caller left: the give-back must still happen
	d, rc, err := c.TakeReceiptContext(ctx, "k", 2)
	require.NoError(t, err, "the children decided")
	assert.False(t, d.Allowed, "the denier has 1 left")
	assert.Zero(t, rc)
	require.Len(t, first.refunds, 1)
	require.NotNil(t, first.refunds[0], "given back with a context")
	assert.NoError(t, first.refunds[0].Err(), "without the caller's cancellation")
	assert.Equal(t, "request", first.refunds[0].Value(ctxKey{}), "the caller's context's values")
	assert.Equal(t, 5, first.Take("k", 0).Remaining, "the first child got back what it took")
}

// TestTakeContextEndedWhileAChildCouldNotDecideGivesBackAll: a request that
// ended while a child could not decide (its failure policy passed it,
// counting nothing) counts nowhere: every child gives back what it took,
// and the error wraps the context's and the child's. The request is no
// pass to hotlimit.WaitN.
func TestTakeContextEndedWhileAChildCouldNotDecideGivesBackAll(t *testing.T) {
	counting := newRemote(t, 5)
	leaving := &limitertest.CancelingRefunder{}
	c, err := composite.New(counting, leaving)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	leaving.Cancel = cancel
	d, rc, err := c.TakeReceiptContext(ctx, "k", 2)
	assert.True(t, d.Allowed, "the failure policy passed it")
	assert.Zero(t, rc, "nothing to give back later")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "the counting child gave it back")
	require.Len(t, counting.refunds, 1)
	require.NotNil(t, counting.refunds[0], "given back with a context")
	assert.NoError(t, counting.refunds[0].Err(), "without the ended request's cancellation, which a backend would refuse")

	ctx, cancel = context.WithCancel(context.Background())
	leaving.Cancel = cancel
	err = hotlimit.WaitN(ctx, c, "k", 2)
	assert.ErrorIs(t, err, context.Canceled, "no pass to a waiter")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "and nothing kept")

	// A live request whose child could not decide counts where it could.
	leaving.Cancel = nil
	d, err = c.TakeContext(context.Background(), "k", 2)
	assert.True(t, d.Allowed)
	assert.NoError(t, err, "the child answered without an error")
	assert.Equal(t, 3, counting.Take("k", 0).Remaining)
}

// TestTakeContextPastItsDeadlineWhileAChildCouldNotDecideGivesBackAll: a
// request whose deadline passed while a child could not decide (a backend
// that sets the deadline on its socket fails at it, a little before the
// context's timer runs and its Err reads so) has ended as a canceled one
// has: every child gives back what it took, and the error wraps
// context.DeadlineExceeded. Read by ctx.Err() alone, it counted where it
// could, as a live request does, though its caller will not serve it.
func TestTakeContextPastItsDeadlineWhileAChildCouldNotDecideGivesBackAll(t *testing.T) {
	counting, failing := newRemote(t, 5), newRemote(t, 5)
	failing.fail = true
	c, err := composite.New(counting, failing)
	require.NoError(t, err)

	d, rc, err := c.TakeReceiptContext(limitertest.PastDeadline(context.Background()), "k", 2)
	assert.True(t, d.Allowed, "the failure policy passed it")
	assert.Zero(t, rc, "nothing to give back later")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, errBackend, "and the child's own")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "the counting child gave it back")

	d, err = c.TakeContext(context.Background(), "k", 2)
	assert.True(t, d.Allowed)
	assert.ErrorIs(t, err, errBackend)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "a live request")
	assert.Equal(t, 3, counting.Take("k", 0).Remaining, "counts where it could")
}

// TestWaitNPastItsDeadlineWhileAChildCouldNotDecideIsNoPass: WaitN reads a
// pass that the composite gave back, the request past its deadline while a
// child could not decide (its timer not run yet, ctx.Err() still nil), as
// the composite does: no pass, an error wrapping context.DeadlineExceeded.
// Read by ctx.Err() alone, it returned nil, and its caller served a request
// that no child counted.
func TestWaitNPastItsDeadlineWhileAChildCouldNotDecideIsNoPass(t *testing.T) {
	counting, failing := newRemote(t, 5), newRemote(t, 5)
	failing.fail = true
	c, err := composite.New(counting, failing)
	require.NoError(t, err)

	err = hotlimit.WaitN(limitertest.PastDeadline(context.Background()), c, "k", 2)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no pass to a waiter")
	assert.ErrorIs(t, err, errBackend, "and the child's own")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "the counting child gave it back")

	assert.NoError(t, hotlimit.WaitN(context.Background(), c, "k", 2), "a live request passes")
	assert.Equal(t, 3, counting.Take("k", 0).Remaining, "and counts where it could")
}

// TestTakeContextJoinsTheChildrenErrors: the errors of the children that
// could not decide, in a take, in a report (n = 0) and in a refund, are
// joined in the one returned, and every child is still asked.
func TestTakeContextJoinsTheChildrenErrors(t *testing.T) {
	a, b := newRemote(t, 5), newRemote(t, 5)
	a.fail = true
	c, err := composite.New(a, b)
	require.NoError(t, err)

	d, rc, err := c.TakeReceiptContext(context.Background(), "k", 1)
	assert.ErrorIs(t, err, errBackend)
	assert.True(t, d.Allowed)
	assert.Zero(t, rc, "a child that keeps state counted nothing: no receipt")
	assert.Equal(t, 4, b.Take("k", 0).Remaining, "the other child counts")

	_, err = c.TakeContext(context.Background(), "k", 0)
	assert.ErrorIs(t, err, errBackend, "a report asks under the context too")
	require.Len(t, a.takes, 2)
	assert.NotNil(t, a.takes[1])

	err = c.RefundContext(context.Background(), "k", hotlimit.Receipt{N: 1, At: 1})
	assert.ErrorIs(t, err, errBackend)
	assert.Len(t, b.refunds, 1, "every child is given the receipt")
	assert.Equal(t, 5, b.Take("k", 0).Remaining)
	assert.NoError(t, c.RefundContext(context.Background(), "k", hotlimit.Receipt{}), "the zero Receipt gives back nothing")
}

// TestTakeContextOfNeverAsksNoChildForN: a request of more than a child's
// burst is denied with hotlimit.Never under a context too, each child
// asked only for its state.
func TestTakeContextOfNeverAsksNoChildForN(t *testing.T) {
	a, b := newRemote(t, 5), newRemote(t, 3)
	c, err := composite.New(a, b)
	require.NoError(t, err)
	d, err := c.TakeContext(context.Background(), "k", 4)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, 5, a.Take("k", 0).Remaining, "nothing taken")
	assert.Len(t, a.takes, 1)
	assert.NotNil(t, a.takes[0], "asked for its state under the context")
}
