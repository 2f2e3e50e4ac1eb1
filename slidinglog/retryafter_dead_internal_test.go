package slidinglog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetryAfterOfASweptKeyIsZero: RetryAfter that finds the cell of its key
// tombstoned by a Sweep (killed, not yet deleted from the map) waits
// nothing, as the Take it speaks of passes on the key's next, fresh cell,
// even when the clock has stepped back since the sweep, to a time at which
// the dead ring's requests would still be in the window.
func TestRetryAfterOfASweptKeyIsZero(t *testing.T) {
	l, now := newTest(t, 2)
	now.Store(int64(time.Hour))
	require.True(t, l.Take("k", 2).Allowed)
	c, _ := l.cells.Peek("k")
	now.Add(int64(2 * time.Second))
	require.True(t, c.kill(now.Load(), l.window))
	now.Store(int64(time.Hour + time.Second/2)) // back: both requests in the window
	_, held := l.cells.Peek("k")
	require.True(t, held, "killed, still mapped")
	assert.Zero(t, l.RetryAfter("k", 1))
	assert.Zero(t, l.RetryAfter("k", 2))
	assert.True(t, l.Take("k", 2).Allowed, "the Take it speaks of passes")
}
