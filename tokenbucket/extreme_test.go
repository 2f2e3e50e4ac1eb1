package tokenbucket_test

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// checkDurations asserts what every Decision of Take(key, n) must hold, at
// any clock: no negative duration, RetryAfter 0 exactly when allowed,
// Never for n outside [0, burst], and a full bucket exactly when ResetAfter
// is 0.
func checkDurations(t *testing.T, d hotlimit.Decision, n, burst int, msg string) {
	t.Helper()
	assert.GreaterOrEqual(t, d.RetryAfter, time.Duration(0), "%s: RetryAfter", msg)
	assert.GreaterOrEqual(t, d.ResetAfter, time.Duration(0), "%s: ResetAfter", msg)
	if d.Allowed {
		assert.Zero(t, d.RetryAfter, "%s: allowed", msg)
	} else {
		assert.Positive(t, d.RetryAfter, "%s: a denial says when to retry", msg)
	}
	if n < 0 || n > burst {
		assert.Equal(t, hotlimit.Never, d.RetryAfter, "%s", msg)
	}
	assert.Equal(t, d.Remaining == burst, d.ResetAfter == 0, "%s: ResetAfter is 0 exactly when full", msg)
}

// TestExtremeClocks runs at the ends of int64 time: whatever the epoch and
// whatever a later reading (far behind the epoch included, and readings
// past the limiter's horizon), no duration is negative and no denial says
// RetryAfter 0.
func TestExtremeClocks(t *testing.T) {
	clocks := []int64{
		math.MinInt64, math.MinInt64 + 1, math.MinInt64 + int64(time.Second),
		-int64(time.Hour), -1, 0, 1, int64(time.Hour),
		math.MaxInt64 - int64(time.Second), math.MaxInt64 - 1, math.MaxInt64,
	}
	for _, epoch := range clocks {
		for _, at := range clocks {
			t.Run(fmt.Sprintf("epoch=%d/at=%d", epoch, at), func(t *testing.T) {
				var now atomic.Int64
				now.Store(epoch)
				lim, err := tokenbucket.New(2, time.Second, hotlimit.WithClock(now.Load))
				require.NoError(t, err)
				now.Store(at)
				for i, n := range []int{0, 1, 2, 2, 1, 0, 3, -1} {
					d := lim.Take("k", n)
					checkDurations(t, d, n, 2, fmt.Sprintf("step %d: Take(%d)", i, n))
				}
				lim.Allow("k")
				checkDurations(t, lim.Take("k", 1), 1, 2, "after Allow")
			})
		}
	}
}

// TestExtremeClocksExact: at the epoch, wherever it is on the int64 line,
// the durations are exact; a clock far behind the epoch (more than
// math.MaxInt64 behind) or a limiter whose time has stopped says Never.
func TestExtremeClocksExact(t *testing.T) {
	limitertest.BucketAtExtremeEpochs(t, limitertest.Adapt(tokenbucket.New))

	// Just within a Duration of the epoch: exact, up to a wait that ends
	// at math.MaxInt64, the last reading; one that ends later says Never.
	var now atomic.Int64
	epoch := int64(math.MaxInt64 - time.Second)
	now.Store(epoch)
	lim, err := tokenbucket.New(2, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(math.MinInt64)
	require.True(t, lim.Take("k", 2).Allowed)
	now.Store(epoch - int64(time.Hour))
	d := lim.Take("k", 1)
	assert.Equal(t, time.Hour+500*ms, d.RetryAfter)
	assert.Equal(t, time.Hour+time.Second, d.ResetAfter)
	now.Store(epoch - int64(time.Hour) + 1)
	d = lim.Take("k", 2)
	assert.Equal(t, time.Hour+time.Second-1, d.RetryAfter)
	now.Store(math.MaxInt64)
	assert.True(t, lim.Take("k", 2).Allowed, "the wait ended at math.MaxInt64")
	d = lim.Take("k", 1)
	assert.Equal(t, never, d.RetryAfter, "a refill after math.MaxInt64")
	assert.Equal(t, never, d.ResetAfter)
}

// TestTimeStops: past the limiter's horizon (about 146 years after its
// epoch) its time stands still, so a drained key never refills: Never.
func TestTimeStops(t *testing.T) {
	var now atomic.Int64
	lim, err := tokenbucket.New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(math.MaxInt64)
	assert.True(t, lim.Allow("k"))
	d := lim.Take("k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, never, d.RetryAfter)
	assert.Equal(t, never, d.ResetAfter)
}
