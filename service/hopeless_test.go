package service_test

import (
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
