package service_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// countingBucket is a token bucket that counts the requests it is asked to
// take (TakeReceipt with n ≥ 1), as a rule of several limits asks them.
type countingBucket struct {
	*tokenbucket.Limiter
	asked *atomic.Int64
}

func (c countingBucket) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n >= 1 {
		c.asked.Add(1)
	}
	return c.Limiter.TakeReceipt(key, n)
}

// TestRequestNoLimitCanHoldAsksNoLimitToTakeIt: a request of more than some
// limit of the rule can ever hold (7 under a 5/min window) never passes, so
// no limit is asked to take it, not even one that would admit it (a 10/s
// bucket holding 10): taking it there to give it back at once would leave
// the bucket short of 7 requests meanwhile, denying concurrent requests it
// has room for. Every limit only reports, and the denial is the one Take
// gave before: RetryAfter Never, the least Remaining of the limits.
func TestRequestNoLimitCanHoldAsksNoLimitToTakeIt(t *testing.T) {
	var asked atomic.Int64
	clock, _ := frozen(int64(time.Hour))
	factory := hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if tb, ok := l.(*tokenbucket.Limiter); ok {
			return countingBucket{tb, &asked}, err
		}
		return l, err
	})
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{bucket, window}}, clock, factory)
	require.NoError(t, err)

	d, c := s.TakePolicy("u", "a", 7)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, window, c, "the window, short of 7, decided")
	assert.Equal(t, 5, d.Remaining, "the window's own Remaining")
	assert.Zero(t, asked.Load(), "the bucket was asked to take a request that could never pass")
	assert.Equal(t, hotlimit.Decision{Allowed: false, Limit: 5, Remaining: 5, RetryAfter: hotlimit.Never},
		s.Take("u", "a", 7), "Take: the least Remaining, nothing to reset")
	assert.Zero(t, asked.Load())

	require.True(t, s.Take("u", "a", 5).Allowed, "both limits still hold 5")
	assert.Equal(t, int64(1), asked.Load())
}

// TestRequestNoLimitCanHoldLeavesASlidingLogAsItWas: under a rule of two
// sliding logs, 10 per minute and 5 per second, a request of 8 can never
// pass the second. Asking the first to take it, to give it back when the
// second denies, aged the first log: its refund marks its oldest entries,
// so the request of 0 s was dropped and one of 30 s kept, holding a slot a
// further 30 s. A minute after the first request its slot is free again,
// and 5 requests at 61 s pass both logs, as they would had the request of 8
// never been made.
func TestRequestNoLimitCanHoldLeavesASlidingLogAsItWas(t *testing.T) {
	clock, now := frozen(int64(time.Hour))
	at := func(d time.Duration) { now.Store(int64(time.Hour + d)) }
	minute := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 10, Window: time.Minute}
	second := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Second}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{minute, second}}, clock)
	require.NoError(t, err)

	require.True(t, s.Take("u", "a", 1).Allowed)
	at(30 * time.Second)
	d := s.Take("u", "a", 8)
	require.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, 30*time.Second, d.ResetAfter, "the minute log holds only the request of 0 s")
	at(59900 * time.Millisecond)
	require.True(t, s.Take("u", "a", 5).Allowed, "6 of 10 in the minute, 5 of 5 in the second")
	at(61 * time.Second)
	d = s.Take("u", "a", 5)
	assert.True(t, d.Allowed, "the request of 0 s has left the minute: %+v", d)
	assert.Equal(t, 0, d.Remaining)
}

// downClosed is a limiter that takes a context, whose backend is down and
// whose failure policy denies every request (a report passes, Remaining 0),
// as redislimit's FailClosed does.
type downClosed struct{ limit int }

var errDown = errors.New("backend down")

func (d downClosed) Allow(key string) bool { return d.Take(key, 1).Allowed }

func (d downClosed) Take(key string, n int) hotlimit.Decision {
	dd, _ := d.TakeReceipt(key, n)
	return dd
}

func (d downClosed) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	dd, r, _ := d.TakeReceiptContext(context.Background(), key, n)
	return dd, r
}

func (d downClosed) TakeReceiptContext(_ context.Context, _ string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	dd := hotlimit.Decision{Allowed: n == 0, Limit: d.limit}
	if n != 0 {
		dd.RetryAfter = time.Second
	}
	return dd, hotlimit.Receipt{}, errDown
}

func (downClosed) Refund(string, hotlimit.Receipt) {}

func (downClosed) RefundContext(context.Context, string, hotlimit.Receipt) error { return nil }

// TestRequestNoLimitCanHoldIsNotDecidedByAFailedReport: a request of more
// than some limit can ever hold is decided by a limit that can never hold
// it, never by one whose report failed, though its failure policy, asked
// for the request in order, might have denied it first. So under a 10/s
// bucket whose backend is down and a 5/min window, 7 requests are the
// window's denial, with no error of its own (a quota, not a failure,
// denies them), the bucket's error beside it; so they are under a 4/s
// bucket, which can never hold them either but whose failed report tells
// nothing of its quota. With the window's backend down too, the window,
// the one limit that can never hold them, decides all the same, its error
// its own.
func TestRequestNoLimitCanHoldIsNotDecidedByAFailedReport(t *testing.T) {
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	for _, tc := range []struct {
		bucket   int // the bucket's limit per second
		bothDown bool
	}{{10, false}, {10, true}, {4, false}} {
		bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: tc.bucket, Window: time.Second}
		factory := hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
			if c.Algorithm == hotlimit.TokenBucket || tc.bothDown {
				return downClosed{c.Limit}, nil
			}
			return service.NewLimiter(c, opts...)
		})
		clock, _ := frozen(int64(time.Hour))
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{bucket, window}}, clock, factory)
		require.NoError(t, err)

		d, each, err := s.TakeEach(context.Background(), "u", "a", 7, nil)
		require.ErrorIs(t, err, errDown)
		assert.False(t, d.Allowed)
		assert.Equal(t, hotlimit.Never, d.RetryAfter)
		require.Len(t, each, 2)
		assert.Equal(t, window, each[0].Config, "%+v: the window, which can never hold 7, decided", tc)
		assert.Equal(t, hotlimit.Never, each[0].Decision.RetryAfter)
		if tc.bothDown {
			assert.ErrorIs(t, each[0].Err, errDown, "the window's own report failed")
		} else {
			assert.NoError(t, each[0].Err, "%+v: the window decided by its quota", tc)
			assert.Equal(t, 5, each[0].Decision.Remaining)
		}
		assert.Equal(t, bucket, each[1].Config)
		assert.ErrorIs(t, each[1].Err, errDown)
		_, c := s.TakePolicy("u", "a", 7)
		assert.Equal(t, window, c, "%+v: TakePolicy", tc)
	}
}

// TestRequestNoLimitCanHoldIsDecidedByALimitThatNeverAdmitsIt: of a 10/s
// bucket per user holding 3 and a 5/min window, a request of 6 is decided
// by the window, which can never hold 6, not by the bucket, which is short
// of 6 only for now and admits 6 once it refills: a denial that says never
// names the limit it is never admitted under (httplimit's 429 says "can
// never pass under" that limit).
func TestRequestNoLimitCanHoldIsDecidedByALimitThatNeverAdmitsIt(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Scope: hotlimit.PerUser}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{bucket}, APIs: map[string]service.Limits{
		"a": {bucket, window},
	}}, clock)
	require.NoError(t, err)
	require.True(t, s.Take("u", "b", 7).Allowed, "the user's bucket, spent on b, holds 3")

	d, c := s.TakePolicy("u", "a", 6)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, window, c, "the window, which never holds 6, decided")
	assert.Equal(t, 5, d.Remaining, "TakePolicy: the window's own decision")
	rd := s.Take("u", "a", 6)
	assert.Equal(t, hotlimit.Decision{Allowed: false, Limit: 10, Remaining: 3, RetryAfter: hotlimit.Never, ResetAfter: rd.ResetAfter},
		rd, "Take: the least Remaining, the bucket's")
	assert.True(t, s.Take("u", "b", 3).Allowed, "the bucket still holds 3")
}
