package composite_test

//lint:file-ignore SA1012 these tests pass a nil context on purpose: the API accepts one

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// entry is a limiter that takes a context and records by which of its
// methods it was asked: "take" for Take, "receipt" for TakeReceipt,
// "context" for TakeReceiptContext, whatever the context (nil included),
// "refund" and "refund context" for the give-backs. Every take answers
// d (a report, n == 0, allowed with no wait), with the receipt r when it
// admits n > 0, and TakeReceiptContext the error err for n > 0 (a report
// succeeds); RefundContext answers refundErr.
type entry struct {
	calls     []string
	d         hotlimit.Decision
	r         hotlimit.Receipt
	err       error
	refundErr error
}

func (e *entry) Allow(key string) bool { return e.Take(key, 1).Allowed }

func (e *entry) Take(key string, n int) hotlimit.Decision {
	e.calls = append(e.calls, "take")
	return e.decision(n)
}

func (e *entry) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	e.calls = append(e.calls, "receipt")
	return e.decision(n), e.receipt(n)
}

func (e *entry) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	e.calls = append(e.calls, "context")
	if n < 1 {
		return e.decision(n), e.receipt(n), nil
	}
	return e.decision(n), e.receipt(n), e.err
}

func (e *entry) Refund(string, hotlimit.Receipt) { e.calls = append(e.calls, "refund") }

func (e *entry) RefundContext(context.Context, string, hotlimit.Receipt) error {
	e.calls = append(e.calls, "refund context")
	return e.refundErr
}

// decision is d, but for a report (n == 0), which is allowed with no wait.
func (e *entry) decision(n int) hotlimit.Decision {
	d := e.d
	if n == 0 {
		d.Allowed, d.RetryAfter = true, 0
	}
	return d
}

func (e *entry) receipt(n int) hotlimit.Receipt {
	if n < 1 || !e.d.Allowed {
		return hotlimit.Receipt{}
	}
	return e.r
}

var (
	errTake   = errors.New("take failed")
	errRefund = errors.New("refund failed")
)

// TestWithoutAContextAChildThatTakesOneIsAskedByItsOwnMethods: a composite
// asked without a context (Take, TakeReceipt, a report by Take(key, 0)) asks
// a child that takes a context by the method the composite itself was
// asked by, as the child would be asked alone, never by
// TakeReceiptContext with a nil context; so does an Asker asked with a nil
// ctx, and it gives back what it took by Refund.
func TestWithoutAContextAChildThatTakesOneIsAskedByItsOwnMethods(t *testing.T) {
	pass := hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 4}
	child := &entry{d: pass, r: hotlimit.Receipt{N: 1, At: 7}}
	c, err := composite.New(child)
	require.NoError(t, err)

	d, r := c.TakeReceipt("k", 1)
	assert.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 1, At: 7}, r)
	assert.Equal(t, []string{"receipt"}, child.calls, "TakeReceipt")

	child.calls = nil
	assert.True(t, c.Take("k", 0).Allowed)
	assert.Equal(t, []string{"take"}, child.calls, "Take(key, 0), a report")

	child.calls = nil
	w, err := composite.NewAsker(child, false).Ask(nil, "k", 1)
	require.NoError(t, err)
	assert.Zero(t, w, "it admits now")
	assert.Equal(t, []string{"receipt", "refund"}, child.calls, "Ask(nil, ...)")
}

// TestAskerReportsTheLimitersErrors: an Asker returns the error of a
// limiter that could not tell (its failure policy answered: no wait, even
// when the policy denied with one) and of one that could not give back
// what the question took, both when both failed; a single error is
// returned as it is.
func TestAskerReportsTheLimitersErrors(t *testing.T) {
	ctx := context.Background()
	held := hotlimit.Receipt{N: 1, At: 7}

	// A failure policy that denies, telling a wait: the wait is its, not
	// the quota's.
	policy := &entry{d: hotlimit.Decision{Limit: 5, RetryAfter: 5 * time.Second}, err: errTake}
	w, err := composite.NewAsker(policy, false).Ask(ctx, "k", 1)
	assert.Zero(t, w, "a failure policy's denial waits nothing")
	assert.Same(t, errTake, err)

	// Admitted, counted, and the give-back failed.
	kept := &entry{d: hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 4}, r: held, refundErr: errRefund}
	w, err = composite.NewAsker(kept, false).Ask(ctx, "k", 1)
	assert.Zero(t, w)
	assert.Same(t, errRefund, err, "the give-back's error, as it is")
	assert.Equal(t, []string{"context", "refund context"}, kept.calls)

	// Admitted by a failure policy that counted after all, and the
	// give-back failed too: both errors.
	both := &entry{d: hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 4}, r: held, err: errTake, refundErr: errRefund}
	w, err = composite.NewAsker(both, false).Ask(ctx, "k", 1)
	assert.Zero(t, w)
	assert.ErrorIs(t, err, errTake)
	assert.ErrorIs(t, err, errRefund)

	// Inside a composite, the give-back of its children's receipts.
	inner := &entry{d: hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 4}, r: held, refundErr: errRefund}
	c, err := composite.New(inner)
	require.NoError(t, err)
	w, err = composite.NewAsker(c, false).Ask(ctx, "k", 1)
	assert.Zero(t, w)
	assert.ErrorIs(t, err, errRefund, "a composite's child that could not give back")
	assert.Equal(t, []string{"context", "refund context"}, inner.calls)
}

// TestADenierIsNotAskedAgainForItsState: on a denial, the denying child's
// own decision stands for it among the children's states: it is asked
// once, for the request, and not again for a report (one more round trip
// to a backend, and one more chance to fail), and its Remaining is the
// one its denial gave.
func TestADenierIsNotAskedAgainForItsState(t *testing.T) {
	denier := &entry{d: hotlimit.Decision{Limit: 10, Remaining: 3, RetryAfter: time.Second}}
	c, err := composite.New(denier)
	require.NoError(t, err)
	d, err := c.TakeContext(context.Background(), "k", 4)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 3, d.Remaining)
	assert.Equal(t, time.Second, d.RetryAfter)
	assert.Equal(t, []string{"context"}, denier.calls, "asked once")

	denier.calls = nil
	assert.False(t, c.Take("k", 4).Allowed)
	assert.Equal(t, []string{"receipt"}, denier.calls, "asked once, without a context")
}

// TestAskerOfNoRequestsAsksNothing: an Asker asked for n < 1 requests asks
// its limiter nothing, not even for a report, and waits nothing.
func TestAskerOfNoRequestsAsksNothing(t *testing.T) {
	child := &entry{d: hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 4}, r: hotlimit.Receipt{N: 1, At: 7}}
	for _, n := range []int{0, -1} {
		w, err := composite.NewAsker(child, false).Ask(context.Background(), "k", n)
		require.NoError(t, err)
		assert.Zero(t, w, "n = %d", n)
		assert.Empty(t, child.calls, "n = %d", n)
	}
}

// TestAFailedQuestionIsBesideTheDenial: when a child after the denier,
// asked for its wait, cannot tell (its failure policy answers), its error
// comes back beside the denial, which the denier decided on its quota:
// DecidingError reads none, and the wait is the denier's.
func TestAFailedQuestionIsBesideTheDenial(t *testing.T) {
	denier := &entry{d: hotlimit.Decision{Limit: 10, RetryAfter: time.Second}}
	later := &entry{d: hotlimit.Decision{Limit: 10, RetryAfter: time.Hour}, err: errTake}
	c, err := composite.New(denier, later)
	require.NoError(t, err)
	d, err := c.TakeContext(context.Background(), "k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, time.Second, d.RetryAfter, "the failed question waits nothing")
	assert.ErrorIs(t, err, errTake)
	assert.NoError(t, composite.DecidingError(err), "the denier decided on its quota")
	assert.Equal(t, []string{"context", "context"}, later.calls, "its report, then the question")
}

// TestAskerOfACompositeHoldingALogReturnsItsChildrensErrors: an Asker of a
// composite that holds a sliding log asks it child by child, and returns
// the error of a child that could not tell its wait.
func TestAskerOfACompositeHoldingALogReturnsItsChildrensErrors(t *testing.T) {
	log, err := slidinglog.New(5, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	failing := &entry{d: hotlimit.Decision{Limit: 10, RetryAfter: time.Hour}, err: errTake}
	c, err := composite.New(log, failing)
	require.NoError(t, err)
	w, err := composite.NewAsker(c, false).Ask(context.Background(), "k", 1)
	assert.Zero(t, w, "the log admits now; the failing child tells no wait")
	assert.ErrorIs(t, err, errTake)
	assert.Equal(t, []string{"context", "context"}, failing.calls, "its report, then the question")
}
