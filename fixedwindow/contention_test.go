package fixedwindow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestDenialOnStaleReadingReadsAgain: the clock is read before the word,
// but a denial is never decided on a reading behind the stored window. At 1
// per second, A reads the clock at 0.9 s; before A loads the word, B passes
// at 1.1 s (window 1, now full) and the clock moves to 2.1 s. On its reading
// (window 0) A would count against B's full window; read again, it starts
// window 2 and passes, as the model with A at 2.1 s does.
func TestDenialOnStaleReadingReadsAgain(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c limitertest.HookClock
		lim, err := fixedwindow.New(1, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		c.Now.Store(int64(900 * time.Millisecond))
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(1100 * time.Millisecond))
			b = lim.Allow("k")
			c.Now.Store(int64(2100 * time.Millisecond))
		}
		if take {
			assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: 900 * time.Millisecond}, lim.Take("k", 1), "A, read again at 2.1 s")
		} else {
			assert.True(t, lim.Allow("k"), "A, read again at 2.1 s")
		}
		assert.True(t, b, "B at 1.1 s")
		assert.Nil(t, c.Hook, "the hook ran, inside A's call")
		assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: 900 * time.Millisecond, ResetAfter: 900 * time.Millisecond}, lim.Take("k", 1))
	}
}
