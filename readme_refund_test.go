package hotlimit_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestREADMERefundsAsListed: what README's "Giving back, and waiting" says
// each refund gives back. A token bucket gives all of a Take back on a clock
// stepped back behind it, but not once the key refilled since; a sliding
// counter gives a Take back while its window is the previous one, the key
// having moved on to the current one, not only while it is current.
func TestREADMERefundsAsListed(t *testing.T) {
	var now atomic.Int64
	clock := hotlimit.WithClock(now.Load)

	now.Store(int64(time.Hour))
	tb, err := tokenbucket.New(5, time.Second, clock)
	require.NoError(t, err)
	// Later than New: a clock read before New's reading counts as that
	// reading, so a step back from New's own time would step back nowhere.
	now.Add(int64(time.Minute))
	tb.Take("k", 4)
	_, r := tb.TakeReceipt("k", 1)
	require.Equal(t, 1, r.N)
	now.Add(-int64(time.Second)) // stepped back behind the Take
	tb.Refund("k", r)
	now.Add(int64(time.Second))
	assert.Equal(t, 1, tb.Take("k", 0).Remaining, "stepped back: all of it")

	now.Store(int64(2 * time.Hour))
	tb, err = tokenbucket.New(5, time.Second, clock)
	require.NoError(t, err)
	tb.Take("k", 4)
	_, r = tb.TakeReceipt("k", 1) // drained
	now.Add(int64(100 * time.Millisecond))
	tb.Refund("k", r) // 0.5 refilled since: 0.5 given back, 1 token held
	assert.Equal(t, 800*time.Millisecond, tb.Take("k", 0).ResetAfter, "refilled since: less")

	now.Store(int64(time.Hour))
	sc, err := slidingcounter.New(4, time.Second, clock)
	require.NoError(t, err)
	_, r = sc.TakeReceipt("k", 4)
	now.Add(int64(1500 * time.Millisecond)) // the previous window, weighing half
	// A request in the current window moves the key on to it, so that the
	// Take's count is the previous one (a report, n = 0, moves nothing).
	require.True(t, sc.Take("k", 1).Allowed)
	require.Equal(t, 1, sc.Take("k", 0).Remaining) // 4 × 0.5 + 1
	sc.Refund("k", r)
	assert.Equal(t, 3, sc.Take("k", 0).Remaining, "previous window: given back, the current one's kept")
}
