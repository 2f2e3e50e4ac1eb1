package composite_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
)

// configLog is a sliding log known only by its Config, as redislimit's
// are: a composite cannot ask it for its wait without a Take. It counts in
// memory (a fixed window stands in for the log) and records the Takes of
// one request or more that it is asked.
type configLog struct {
	*fixedwindow.Limiter
	takes [3]atomic.Int64 // Takes of n = 1, n = 2 and n > 2
}

func (c *configLog) Config() hotlimit.Config {
	return hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: c.Burst(), Window: time.Minute}
}

func (c *configLog) count(n int) {
	if n > 0 {
		c.takes[min(n, 3)-1].Add(1)
	}
}

func (c *configLog) Take(key string, n int) hotlimit.Decision {
	c.count(n)
	return c.Limiter.Take(key, n)
}

func (c *configLog) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	c.count(n)
	return c.Limiter.TakeReceipt(key, n)
}

// TestRetryAfterAsksALogKnownByItsConfigForOneRequestOnly: after an earlier
// child denies a request, a later sliding log that only its Config tells
// as one (redislimit's) is asked by a Take for a request of one, which it
// gives back, and not asked at all for a request of several, as the
// package documentation says: its Take of several could count some and
// deny, and its give-back marks another request than the new one.
func TestRetryAfterAsksALogKnownByItsConfigForOneRequestOnly(t *testing.T) {
	for _, n := range []int{1, 2} {
		var now atomic.Int64
		first, err := fixedwindow.New(n, time.Minute, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		// The log has room for n − 1 more after the first request: it
		// reports less than the second needs, and so is a child to ask.
		inner, err := fixedwindow.New(2*n-1, time.Minute, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		log := &configLog{Limiter: inner}
		lim, err := composite.New(first, log)
		require.NoError(t, err)
		require.True(t, lim.Take("k", n).Allowed, "n=%d", n)
		before := [3]int64{log.takes[0].Load(), log.takes[1].Load(), log.takes[2].Load()}
		d := lim.Take("k", n)
		require.False(t, d.Allowed, "n=%d: the first child denies", n)
		asked := [3]int64{log.takes[0].Load() - before[0], log.takes[1].Load() - before[1], log.takes[2].Load() - before[2]}
		if n == 1 {
			assert.Equal(t, [3]int64{1, 0, 0}, asked, "a request of one: the log is asked by a Take of one")
		} else {
			assert.Equal(t, [3]int64{0, 0, 0}, asked, "a request of %d: the log is not asked", n)
		}
		assert.Equal(t, n-1, log.Take("k", 0).Remaining, "n=%d: the log holds the first request alone", n)
	}
}
