package gcra_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestDenialOnKeptReadingReadsAgain: a word that changed after the caller's
// clock reading (seen by its second load, or by a failed CAS) leaves it the
// reading, but a denial is never decided on it. At 1 per second, a key
// drained at 0 is asked at 2 s by A; between A's Load and its CAS, B takes
// the token at 2.5 s, and the clock moves to 3.5 s. On its kept reading (2 s)
// A would see the key empty; read again (3.5 s) the key holds a token, and A
// passes, as the model with A at 3.5 s does.
func TestDenialOnKeptReadingReadsAgain(t *testing.T) {
	var c limitertest.HookClock
	lim, err := gcra.New(1, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	c.Now.Store(int64(2 * time.Second))
	var b bool
	c.Hook = func() {
		c.Now.Store(int64(2500 * time.Millisecond))
		b = lim.Allow("k")
		c.Now.Store(int64(3500 * time.Millisecond))
	}
	assert.True(t, lim.Allow("k"), "A, read again at 3.5 s")
	assert.True(t, b, "B at 2.5 s")
	assert.Nil(t, c.Hook, "the hook ran, inside A's call")
	assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: time.Second, ResetAfter: time.Second}, lim.Take("k", 1))

	// The same through Take, whose Decision comes from the fresh reading.
	c.Now.Store(0)
	lim, err = gcra.New(1, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	c.Now.Store(int64(2 * time.Second))
	c.Hook = func() {
		c.Now.Store(int64(2500 * time.Millisecond))
		b = lim.Allow("k")
		c.Now.Store(int64(3500 * time.Millisecond))
	}
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: time.Second}, lim.Take("k", 1))
	assert.True(t, b)
}
