package hotlimit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// bubbleAlgorithms builds each in-memory algorithm at 3 per second on the
// default clock, with the RetryAfter of the request after the 3, all taken at
// once, when they are taken at the start of a window aligned on the clock's
// origin: a third of a second, rounded up to the nanosecond, for the two
// buckets, the window's end for the fixed window and the sliding log, and
// for the sliding counter a nanosecond into the next window, where the
// previous window's share of 3 rounds down to 2.
var bubbleAlgorithms = []struct {
	name  string
	new   func() (hotlimit.Limiter, error)
	retry time.Duration
}{
	{"tokenbucket", func() (hotlimit.Limiter, error) { return tokenbucket.New(3, time.Second) }, 333333334},
	{"gcra", func() (hotlimit.Limiter, error) { return gcra.New(3, time.Second) }, 333333334},
	{"fixedwindow", func() (hotlimit.Limiter, error) { return fixedwindow.New(3, time.Second) }, time.Second},
	{"slidingcounter", func() (hotlimit.Limiter, error) { return slidingcounter.New(3, time.Second) }, time.Second + 1},
	{"slidinglog", func() (hotlimit.Limiter, error) { return slidinglog.New(3, time.Second) }, time.Second},
}

// TestSynctestMonotonicCountsFromTheBubblesStart: in a testing/synctest
// bubble the default clock reads the bubble's fake clock from 0, and moves
// exactly as far as time.Sleep does, whenever the process started.
func TestSynctestMonotonicCountsFromTheBubblesStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		assert.Equal(t, int64(0), hotlimit.Monotonic(), "at the bubble's start")
		time.Sleep(1500 * time.Millisecond)
		assert.Equal(t, int64(1500*time.Millisecond), hotlimit.Monotonic(), "after sleeping 1.5 s")
	})
}

// TestSynctestEachAlgorithmAdmitsAgainExactlyAfterItsRetryAfter: each
// algorithm, created in a bubble on the default clock, admits its quota,
// denies the next request with the same RetryAfter at every run (windows
// are aligned on the bubble's start, not on the process's), still denies it
// a nanosecond before that RetryAfter has passed on the fake clock, and
// admits it once it has.
func TestSynctestEachAlgorithmAdmitsAgainExactlyAfterItsRetryAfter(t *testing.T) {
	for _, a := range bubbleAlgorithms {
		t.Run(a.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim, err := a.new()
				require.NoError(t, err)
				require.True(t, lim.Take("k", 3).Allowed, "the quota")
				d := lim.Take("k", 1)
				require.False(t, d.Allowed, "past the quota")
				require.Equal(t, a.retry, d.RetryAfter, "RetryAfter")

				time.Sleep(d.RetryAfter - time.Nanosecond)
				early := lim.Take("k", 1)
				assert.False(t, early.Allowed, "a nanosecond before RetryAfter")
				assert.Equal(t, time.Nanosecond, early.RetryAfter, "RetryAfter a nanosecond before")

				time.Sleep(time.Nanosecond)
				assert.True(t, lim.Take("k", 1).Allowed, "once RetryAfter has passed")
			})
		})
	}
}

// TestSynctestLimiterFromOutsideSeesTimeStepBackToTheBubblesStart: a limiter
// created outside a bubble, as a package-level one is, and used in one sees
// its clock step back from the time the process has run to the bubble's 0,
// and counts the step as no time passing: a key drained before the bubble
// is still drained in it until the bubble's clock reaches the time of the
// drain, and then for its usual wait. Its RetryAfter says so, and holds: the
// key passes once that long has passed on the fake clock.
func TestSynctestLimiterFromOutsideSeesTimeStepBackToTheBubblesStart(t *testing.T) {
	for _, a := range bubbleAlgorithms {
		t.Run(a.name, func(t *testing.T) {
			lim, err := a.new()
			require.NoError(t, err)
			drained := time.Duration(hotlimit.Monotonic()) // the process's time, at most the drain's
			require.True(t, lim.Take("k", 3).Allowed, "the quota, outside the bubble")
			ran := time.Duration(hotlimit.Monotonic()) // the process's time, at least the drain's
			synctest.Test(t, func(t *testing.T) {
				d := lim.Take("k", 1)
				require.False(t, d.Allowed, "in the bubble, the key drained outside")
				// The bubble's clock first catches up with the drain,
				// then the usual wait follows: at most two windows (the
				// sliding counter's) from the drain.
				require.GreaterOrEqual(t, d.RetryAfter, drained, "RetryAfter: the process's time before the drain at least")
				require.LessOrEqual(t, d.RetryAfter, ran+2*time.Second, "RetryAfter: the process's time at most, and the usual wait")
				time.Sleep(d.RetryAfter)
				assert.True(t, lim.Take("k", 1).Allowed, "after RetryAfter on the fake clock")
			})
		})
	}
}

// sharedByBubbles is a package-level limiter, as users declare them: every
// bubble that uses it starts its clock at 0 again.
var sharedByBubbles = mustTokenBucket(1, time.Second)

var sharedRuns atomic.Int64

func mustTokenBucket(limit int, window time.Duration) *tokenbucket.Limiter {
	lim, err := tokenbucket.New(limit, window)
	if err != nil {
		panic(err)
	}
	return lim
}

// TestSynctestLimiterSharedByTwoBubblesCarriesTheFirstOnesTime: a
// package-level limiter that one bubble drains after an hour of fake time is
// found drained by the next bubble, whose clock starts at 0 again, behind
// that hour: the key waits out the hour before its refill of a second (less
// the few nanoseconds the limiter's epoch lies after the clock's origin), as
// RetryAfter says.
func TestSynctestLimiterSharedByTwoBubblesCarriesTheFirstOnesTime(t *testing.T) {
	key := fmt.Sprint("shared", sharedRuns.Add(1)) // a key of its own at each run of the test
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Hour)
		require.True(t, sharedByBubbles.Allow(key), "the first bubble, an hour in")
	})
	synctest.Test(t, func(t *testing.T) {
		d := sharedByBubbles.Take(key, 1)
		require.False(t, d.Allowed, "the second bubble, at its start")
		require.Greater(t, d.RetryAfter, time.Hour, "the first bubble's hour, then the refill")
		require.LessOrEqual(t, d.RetryAfter, time.Hour+time.Second, "the first bubble's hour, then the refill")
		time.Sleep(d.RetryAfter - time.Nanosecond)
		assert.False(t, sharedByBubbles.Allow(key), "a nanosecond before RetryAfter")
		time.Sleep(time.Nanosecond)
		assert.True(t, sharedByBubbles.Allow(key), "once RetryAfter has passed")
	})
}
