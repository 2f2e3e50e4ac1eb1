package tokenbucket_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestXTimeRateEveryOutsideTheWindowRange: rate.Every(d) is New(1, d) only
// for d within Window's range, as the package documentation says. Every
// 100µs is refused as New(1, 100µs), and is New(10, time.Millisecond): one
// request every 100µs once drained. One every 48 h has no counterpart.
func TestXTimeRateEveryOutsideTheWindowRange(t *testing.T) {
	_, err := tokenbucket.New(1, 100*time.Microsecond)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	_, err = tokenbucket.New(1, 48*time.Hour)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)

	var now atomic.Int64
	lim, err := tokenbucket.New(10, time.Millisecond, hotlimit.WithBurst(1), hotlimit.WithClock(now.Load))
	require.NoError(t, err) // rate.NewLimiter(rate.Every(100*time.Microsecond), 1)
	assert.True(t, lim.Allow("k"))
	d := lim.Take("k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, 100*time.Microsecond, d.RetryAfter)
	now.Add(int64(100 * time.Microsecond))
	assert.True(t, lim.Allow("k"))
}
