package composite_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestRetryAfterOfSeveralWaitsForALaterSlidingLog: under 2 per second and a
// sliding log of 2 per minute, asked after the second, a request of 2 half
// a second after the first 2 is denied by the second's limit, and the log
// denies it too until the minute is out: RetryAfter is the log's wait
// (59.5 s), not the second's 0.5 s, after which a retry was denied again;
// the request passes exactly then, and is denied 1 ns sooner. So too with
// the log inside a nested composite. The log is asked without counting
// anything (a twin that was never asked holds the same log), and without
// allocating.
func TestRetryAfterOfSeveralWaitsForALaterSlidingLog(t *testing.T) {
	eachKindNested(t, func(t *testing.T, k kind, nest bool) {
		var now atomic.Int64
		now.Store(int64(1000 * time.Hour)) // on every window's boundary
		second := k.make(t, 2, time.Second, now.Load)
		log := kinds[4].make(t, 2, time.Minute, now.Load)
		twin := kinds[4].make(t, 2, time.Minute, now.Load)
		later := hotlimit.Limiter(log)
		if nest {
			spare := kinds[0].make(t, 100, time.Second, now.Load)
			later = nested(t, spare, log)
		}
		c := nested(t, second, later)

		require.True(t, c.Take("k", 2).Allowed)
		require.True(t, twin.Take("k", 2).Allowed)
		now.Add(int64(500 * time.Millisecond))
		d := c.Take("k", 2)
		require.False(t, d.Allowed)
		assert.Equal(t, 59*time.Second+500*time.Millisecond, d.RetryAfter, "the log's wait")
		assert.Equal(t, twin.Take("k", 0), log.Take("k", 0), "the log as it would be without the question")
		assert.Zero(t, testing.AllocsPerRun(20, func() { c.Take("k", 2) }), "a denial that asks the log")

		limitertest.PassesAtRetryAfter(t, &now, d, func() hotlimit.Decision { return c.Take("k", 2) })
	})
}

// TestRetryAfterLeavesALaterSlidingLogAsItWas forces the race between a
// later sliding log's report and the question of its wait: the log, full
// with requests at 0 s and 30 s of its minute, reports itself spent after
// the first child's denial, then its clock moves past the request at 0 s
// before it is asked for the request. Asked by a Take, it would admit it
// and, given it back, mark its oldest counted request (at 30 s) refunded
// in place of the new one (see slidinglog.Limiter.Refund), holding a
// request of the denied call until a minute after the question. It is
// asked by RetryAfter, which counts nothing: afterwards it is as a twin
// that was never asked, at once and once the request at 30 s has left. So
// too with the log inside a nested composite, whose children are asked
// one by one.
func TestRetryAfterLeavesALaterSlidingLogAsItWas(t *testing.T) {
	for _, nest := range []bool{false, true} {
		t.Run(map[bool]string{false: "child", true: "nested"}[nest], func(t *testing.T) {
			testLaterSlidingLogAsItWas(t, nest)
		})
	}
}

func testLaterSlidingLogAsItWas(t *testing.T, nest bool) {
	var now atomic.Int64 // the first child's and the spare's
	now.Store(int64(1000 * time.Hour))
	var clock limitertest.HookClock // the log's
	first := kinds[2].make(t, 1, time.Hour, now.Load)
	log := kinds[4].make(t, 2, time.Minute, clock.Read)
	twin := kinds[4].make(t, 2, time.Minute, clock.Read)
	later := hotlimit.Limiter(log)
	if nest {
		later = nested(t, kinds[0].make(t, 100, time.Second, now.Load), log)
	}
	c := nested(t, first, later)
	require.True(t, first.Allow("k")) // the hour is spent
	for _, l := range []hotlimit.Limiter{log, twin} {
		clock.Now.Store(0)
		require.True(t, l.Allow("k"))
		clock.Now.Store(int64(30 * time.Second))
		require.True(t, l.Allow("k"))
	}

	clock.Now.Store(int64(35 * time.Second))
	reported := false
	clock.Hook = func() { // at the log's report
		reported = true
		clock.Now.Store(int64(61 * time.Second)) // the request at 0 s has left
	}
	d := c.Take("k", 1)
	require.True(t, reported, "the log reported its state")
	require.False(t, d.Allowed)
	assert.Equal(t, twin.Take("k", 0), log.Take("k", 0), "at the question")
	clock.Now.Store(int64(95 * time.Second)) // the request at 30 s has left
	assert.Equal(t, twin.Take("k", 0), log.Take("k", 0), "once the request at 30 s has left")
	assert.Equal(t, 2, log.Take("k", 0).Remaining)
}

// prefixedLog is a caller's own limiter over a slidinglog.Limiter, which it
// embeds (for Len, Sweep, Burst) while it keys every request under a
// prefix of its own: it has slidinglog's RetryAfter method, promoted, and
// that method speaks of the unprefixed key, which this limiter never counts.
type prefixedLog struct{ *slidinglog.Limiter }

func (l prefixedLog) Allow(key string) bool { return l.Limiter.Allow("tenant:" + key) }
func (l prefixedLog) Take(key string, n int) hotlimit.Decision {
	return l.Limiter.Take("tenant:"+key, n)
}
func (l prefixedLog) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return l.Limiter.TakeReceipt("tenant:"+key, n)
}
func (l prefixedLog) Refund(key string, r hotlimit.Receipt) { l.Limiter.Refund("tenant:"+key, r) }

// TestRetryAfterAsksACallersLimiterByItsTake: a later child that is not
// slidinglog's, but has a RetryAfter(string, int) time.Duration method (a
// caller's limiter that embeds a sliding log and keys its requests its own
// way), is asked for its wait by its Take, as any child: under 1 per second
// and that limiter's 1 per minute, the second request, half a second after
// the first, waits 59.5 s, and passes then, not after the second's 0.5 s,
// which its promoted RetryAfter, asked about a key it never counts, would
// give.
func TestRetryAfterAsksACallersLimiterByItsTake(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(1000 * time.Hour)) // on every window's boundary
	second := kinds[2].make(t, 1, time.Second, now.Load)
	log, err := slidinglog.New(1, time.Minute, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	c := nested(t, second, prefixedLog{log})
	require.True(t, c.Allow("k"))
	now.Add(int64(500 * time.Millisecond))
	d := c.Take("k", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, 59*time.Second+500*time.Millisecond, d.RetryAfter, "the minute's wait")
	assert.Equal(t, 1, log.Len(), "the question counted nothing, under its key or another")

	denied := now.Load()
	now.Store(denied + int64(d.RetryAfter) - 1)
	assert.False(t, c.Allow("k"), "1 ns before RetryAfter")
	now.Store(denied + int64(d.RetryAfter))
	assert.True(t, c.Allow("k"), "at RetryAfter")
}
