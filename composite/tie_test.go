package composite_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/composite"
)

// TestDenialTieGoesToTheFirstChild: a denied Decision carries the Limit and
// Remaining of the child with the least Remaining, the first in the
// children's order on a tie, whichever child denied. A 10/s bucket emptied
// and a 15/min window emptied too: the bucket, asked first, denies, and both
// have 0 left, so the Decision's Limit is the bucket's 10, not the window's.
func TestDenialTieGoesToTheFirstChild(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	second := kinds[0].make(t, 10, time.Second, now.Load)
	minute := kinds[2].make(t, 15, time.Minute, now.Load)
	c, err := composite.New(second, minute)
	require.NoError(t, err)
	require.True(t, c.Take("k", 10).Allowed)
	require.True(t, minute.Take("k", 5).Allowed, "the window emptied on its own")
	d := c.Take("k", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, 0, d.Remaining)
	assert.Equal(t, 10, d.Limit, "the first child's on a tie: the bucket's, which denied")

	// The window first: it denies, and the tie goes to it again.
	c, err = composite.New(minute, second)
	require.NoError(t, err)
	d = c.Take("k", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, 15, d.Limit, "the first child's on a tie: the window's, which denied")
}
