package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// errBackend is what a stepLimiter's backend fails with.
var errBackend = errors.New("backend down")

// stepLimiter is a hotlimit.ContextRefunder of a fixed window that never
// ends, for one key, whose count the test reads as its own sequential model:
// a take of n counts n when count+n ≤ limit. At its take it may end the
// caller's context (cancel), and then fail (fail): pass (or deny when
// closed) with an error, counting nothing, as a failure policy does. It
// records every refund with its receipt and whether its context could
// still be cancelled; a refund fails with refundErr after giving back.
type stepLimiter struct {
	limit, count int
	at           int64
	cancel       context.CancelFunc
	fail, closed bool
	refundErr    error
	takes        int
	refunds      []hotlimit.Receipt
	cancellable  bool // some refund's context could be cancelled
	receipt      hotlimit.Receipt
}

func (l *stepLimiter) decide(n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n < 1 {
		return hotlimit.Decision{Allowed: l.count < l.limit, Limit: l.limit, Remaining: l.limit - l.count}, hotlimit.Receipt{}
	}
	if l.count+n > l.limit {
		return hotlimit.Decision{Limit: l.limit, Remaining: l.limit - l.count, RetryAfter: time.Minute}, hotlimit.Receipt{}
	}
	l.count += n
	l.at++
	l.receipt = hotlimit.Receipt{N: n, At: l.at}
	return hotlimit.Decision{Allowed: true, Limit: l.limit, Remaining: l.limit - l.count}, l.receipt
}

func (l *stepLimiter) Allow(key string) bool { return l.Take(key, 1).Allowed }

func (l *stepLimiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.TakeReceipt(key, n)
	return d
}

func (l *stepLimiter) TakeReceipt(_ string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n >= 1 {
		l.takes++
	}
	return l.decide(n)
}

func (l *stepLimiter) Refund(key string, r hotlimit.Receipt) {
	_ = l.RefundContext(context.Background(), key, r)
}

func (l *stepLimiter) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n >= 1 && l.cancel != nil {
		l.cancel()
	}
	if n >= 1 && l.fail {
		l.takes++
		if l.closed {
			return hotlimit.Decision{Limit: l.limit, RetryAfter: time.Second}, hotlimit.Receipt{}, errBackend
		}
		return hotlimit.Decision{Allowed: true, Limit: l.limit}, hotlimit.Receipt{}, errBackend
	}
	d, r := l.TakeReceipt(key, n)
	return d, r, nil
}

func (l *stepLimiter) RefundContext(ctx context.Context, _ string, r hotlimit.Receipt) error {
	if r.N < 1 {
		return nil
	}
	l.refunds = append(l.refunds, r)
	if ctx.Done() != nil {
		l.cancellable = true
	}
	l.count -= r.N
	return l.refundErr
}

// stepService is a service whose default rule holds the limits, each a
// FixedWindow of the given limit (distinct: they name their stepLimiter).
func stepService(t *testing.T, limits []*stepLimiter, shadow ...bool) (*service.Service, service.Limits) {
	t.Helper()
	byLimit := map[int]*stepLimiter{}
	var rule service.Limits
	for i, l := range limits {
		byLimit[l.limit] = l
		c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: l.limit, Window: time.Hour}
		c.Shadow = i < len(shadow) && shadow[i]
		rule = append(rule, c)
	}
	s, err := service.NewFromRules(service.Rules{Default: rule},
		hotlimit.WithFactory(func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
			return byLimit[c.Limit], nil
		}))
	require.NoError(t, err)
	return s, rule
}

// TestEndedAfterEveryLimitDecidedStands: the context ends at the last
// limit's take, which decides all the same (no error): the request was
// counted everywhere and passes, with no error, and stays counted.
func TestEndedAfterEveryLimitDecidedStands(t *testing.T) {
	for _, n := range []int{1, 2} {
		a, b, c := &stepLimiter{limit: 5}, &stepLimiter{limit: 6}, &stepLimiter{limit: 7}
		s, _ := stepService(t, []*stepLimiter{a, b, c})
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		d, err := s.TakeContext(ctx, "u", "a", n)
		require.NoError(t, err)
		require.Error(t, ctx.Err())
		assert.True(t, d.Allowed)
		for _, l := range []*stepLimiter{a, b, c} {
			assert.Equal(t, n, l.count, "limit %d: the request stands", l.limit)
			assert.Empty(t, l.refunds, "limit %d", l.limit)
		}
		assert.Equal(t, 5-n, d.Remaining)
	}
}

// TestEndedWhileALimitFailsClosedGivesBackTheEarlierOnly: the context ends
// at the second limit's take, which cannot decide and denies: the first,
// which counted, gets exactly its receipt back once, under a context that
// cannot be cancelled; the third is never asked.
func TestEndedWhileALimitFailsClosedGivesBackTheEarlierOnly(t *testing.T) {
	for _, n := range []int{1, 2} {
		a, b, c := &stepLimiter{limit: 5}, &stepLimiter{limit: 6, fail: true, closed: true}, &stepLimiter{limit: 7}
		s, _ := stepService(t, []*stepLimiter{a, b, c})
		ctx, cancel := context.WithCancel(context.Background())
		b.cancel = cancel
		d, err := s.TakeContext(ctx, "u", "a", n)
		require.ErrorIs(t, err, errBackend)
		assert.False(t, d.Allowed)
		assert.Equal(t, time.Second, d.RetryAfter)
		assert.Equal(t, []hotlimit.Receipt{{N: n, At: 1}}, a.refunds)
		assert.False(t, a.cancellable, "the give-back is not cancelled")
		assert.Equal(t, 0, a.count)
		assert.Equal(t, 0, b.count)
		assert.Empty(t, b.refunds)
		assert.Equal(t, 0, c.takes, "the third limit is not asked")
		assert.Equal(t, 0, c.count)
	}
}

// TestEndedWhileALimitFailsOpenGivesBackEveryOther: the context ends at
// the second limit's take, which cannot decide and passes counting
// nothing: the first and the third, which counted, each get exactly their
// receipt back once, under a context that cannot be cancelled, and the
// model's counts are back to zero; the decision passes, with the error.
func TestEndedWhileALimitFailsOpenGivesBackEveryOther(t *testing.T) {
	for _, n := range []int{1, 2} {
		a, b, c := &stepLimiter{limit: 5}, &stepLimiter{limit: 6, fail: true}, &stepLimiter{limit: 7}
		s, _ := stepService(t, []*stepLimiter{a, b, c})
		ctx, cancel := context.WithCancel(context.Background())
		b.cancel = cancel
		d, c0, err := s.TakePolicyContext(ctx, "u", "a", n)
		require.ErrorIs(t, err, errBackend)
		assert.True(t, d.Allowed)
		assert.Zero(t, d.RetryAfter)
		// The failed limit's numbers are its failure policy's, Remaining 0,
		// which counts nothing: the first limit, which decided, is the one
		// named, with its Take's numbers.
		assert.Equal(t, 5, c0.Limit)
		assert.Equal(t, 5-n, d.Remaining)
		for _, l := range []*stepLimiter{a, c} {
			assert.Equal(t, []hotlimit.Receipt{{N: n, At: 1}}, l.refunds, "limit %d", l.limit)
			assert.False(t, l.cancellable, "limit %d: the give-back is not cancelled", l.limit)
			assert.Equal(t, 0, l.count, "limit %d", l.limit)
		}
		assert.Empty(t, b.refunds)
	}
}

// TestEndedGiveBackReachesALimitInShadowMode: a limit in shadow mode that
// counted the ended request gives it back as the others do; one that would
// have denied counted nothing and gives back nothing.
func TestEndedGiveBackReachesALimitInShadowMode(t *testing.T) {
	a, b, c := &stepLimiter{limit: 5}, &stepLimiter{limit: 6, fail: true}, &stepLimiter{limit: 7}
	s, _ := stepService(t, []*stepLimiter{a, b, c}, true, false, false)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	d, err := s.TakeContext(ctx, "u", "a", 1)
	require.ErrorIs(t, err, errBackend)
	assert.True(t, d.Allowed)
	assert.Equal(t, []hotlimit.Receipt{{N: 1, At: 1}}, a.refunds, "the shadow limit counted, and gives back")
	assert.Equal(t, 0, a.count)
	assert.Equal(t, 0, c.count)

	full := &stepLimiter{limit: 4, count: 4}
	b2 := &stepLimiter{limit: 6, fail: true}
	s, _ = stepService(t, []*stepLimiter{full, b2}, true, false)
	ctx, cancel = context.WithCancel(context.Background())
	b2.cancel = cancel
	d, err = s.TakeContext(ctx, "u", "a", 1)
	require.ErrorIs(t, err, errBackend)
	assert.True(t, d.Allowed)
	assert.Empty(t, full.refunds, "the shadow limit that would have denied took nothing")
	assert.Equal(t, 4, full.count)
}

// TestEndedGiveBackRefundErrorsJoinOnce: a give-back that fails joins its
// error to the decision's, and no limit is given back twice.
func TestEndedGiveBackRefundErrorsJoinOnce(t *testing.T) {
	errRefund := errors.New("refund lost")
	a, b, c := &stepLimiter{limit: 5, refundErr: errRefund}, &stepLimiter{limit: 6, fail: true}, &stepLimiter{limit: 7}
	s, _ := stepService(t, []*stepLimiter{a, b, c})
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	_, err := s.TakeContext(ctx, "u", "a", 1)
	require.ErrorIs(t, err, errBackend)
	require.ErrorIs(t, err, errRefund)
	assert.Len(t, a.refunds, 1)
	assert.Len(t, c.refunds, 1)
}

// TestEndedReportTakesNothing: n = 0 only reports, ended context or not:
// nothing is counted and nothing given back.
func TestEndedReportTakesNothing(t *testing.T) {
	a, b := &stepLimiter{limit: 5, count: 1}, &stepLimiter{limit: 6, fail: true}
	s, _ := stepService(t, []*stepLimiter{a, b})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := s.TakeContext(ctx, "u", "a", 0)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 4, d.Remaining)
	assert.Equal(t, 1, a.count)
	assert.Empty(t, a.refunds)
}

// TestEndedGiveBackTakeEachAndObserver: TakeEach lists each limit with the
// rule's pass and its own Take's numbers (the give-back is not reported
// again under the ended context), the limit that decided first, then the
// failed limit with its failure policy's numbers; the observer hears one
// event of the pass, and a limit in shadow mode that counted is given back
// all the same.
func TestEndedGiveBackTakeEachAndObserver(t *testing.T) {
	a, b, c := &stepLimiter{limit: 5}, &stepLimiter{limit: 6, fail: true}, &stepLimiter{limit: 7}
	byLimit := map[int]*stepLimiter{5: a, 6: b, 7: c}
	rule := service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Hour},
		{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Hour, Shadow: true},
	}
	var events []hotlimit.Event
	s, err := service.NewFromRules(service.Rules{Default: rule},
		hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { events = append(events, e) })),
		hotlimit.WithFactory(func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
			return byLimit[c.Limit], nil
		}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	d, each, err := s.TakeEach(ctx, "u", "a", 2, nil)
	require.ErrorIs(t, err, errBackend)
	assert.True(t, d.Allowed)
	require.Len(t, each, 2, "the shadow limit is left out")
	assert.Equal(t, rule[0], each[0].Config)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 3}, each[0].Decision)
	assert.NoError(t, each[0].Err)
	assert.Equal(t, rule[1], each[1].Config)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 6}, each[1].Decision)
	assert.ErrorIs(t, each[1].Err, errBackend)
	for _, l := range []*stepLimiter{a, c} {
		assert.Equal(t, []hotlimit.Receipt{{N: 2, At: 1}}, l.refunds, "limit %d", l.limit)
		assert.Equal(t, 0, l.count, "limit %d", l.limit)
	}
	require.Len(t, events, 1)
	assert.True(t, events[0].Decision.Allowed)
	assert.Equal(t, 2, events[0].N)
}

// TestEndedGiveBackReachesAFailedLimitThatCounted: a limit that could not
// decide but says, by its receipt, that it counted the request (its error
// came after) gives it back with the others, as a denial's give-back does:
// a non-zero receipt is what a limit took.
func TestEndedGiveBackReachesAFailedLimitThatCounted(t *testing.T) {
	a := &stepLimiter{limit: 5}
	b := &countingFailer{stepLimiter: stepLimiter{limit: 6}}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Hour},
	}}, hotlimit.WithFactory(func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == 6 {
			return b, nil
		}
		return a, nil
	}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	d, err := s.TakeContext(ctx, "u", "a", 1)
	require.ErrorIs(t, err, errBackend)
	assert.True(t, d.Allowed)
	assert.Equal(t, 0, a.count)
	assert.Equal(t, []hotlimit.Receipt{{N: 1, At: 1}}, b.refunds, "the failed limit took, and gives back once")
	assert.Equal(t, 0, b.count)
}

// countingFailer is a stepLimiter whose take under a context counts as
// usual, with its receipt, and then fails.
type countingFailer struct{ stepLimiter }

func (l *countingFailer) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r, _ := l.stepLimiter.TakeReceiptContext(ctx, key, n)
	return d, r, errBackend
}
