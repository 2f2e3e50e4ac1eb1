package slidinglog_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// A clock that steps back leaves the newest logged time ahead of the
// reading, and a Take logs there: its receipt must carry the logged time,
// or a refund finds the reading out of the window and gives nothing back.
func TestReceiptAtIsTheLoggedTime(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10 * time.Millisecond))
	l, err := slidinglog.New(2, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, l.Allow("k"))

	now.Store(0) // back by ten windows: the next request is logged at 10 ms
	d, r := l.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	assert.Equal(t, int64(10*time.Millisecond), r.At, "the logged time, not the reading")
	require.False(t, l.Allow("k"), "the log is full")

	l.Refund("k", r)
	assert.True(t, l.Allow("k"), "the refund gave the request back")
}
