package models

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestSlidingLogCloneSharesNothing: what a clone is asked (takes, refunds,
// a sweep) changes the original in no way, and the clone starts with the
// original's log: 2 per second, requests at 0 s and 0.5 s.
func TestSlidingLogCloneSharesNothing(t *testing.T) {
	sec := int64(time.Second)
	m := NewSlidingLog(2, time.Second)
	d, r := m.Take("k", 1, 0), hotlimit.Receipt{N: 1, At: 0}
	require.True(t, d.Allowed)
	require.True(t, m.Take("k", 1, sec/2).Allowed)
	before := m.Take("k", 0, sec*3/4)

	c := m.Clone()
	assert.Equal(t, before, c.Take("k", 0, sec*3/4), "the clone's log is the original's")
	c.Refund("k", r, sec*3/4)                       // marks the 0 s request
	assert.True(t, c.Take("k", 1, sec*3/4).Allowed) // in its place
	assert.True(t, c.Take("k", 1, 2*sec).Allowed)
	assert.Equal(t, 1, c.Sweep(4*sec))

	assert.Equal(t, before, m.Take("k", 0, sec*3/4), "the original after the clone's calls")
	newest, logged := m.Newest("k")
	assert.Equal(t, sec/2, newest)
	assert.Equal(t, 2, logged)
	assert.Equal(t, 2, m.PassedIn("k", sec*3/4))
}

// TestSlidingLogNewestAndNow: Newest reports the key's newest logged time
// and how many it logged, none for a key the model does not hold; Now is
// the time the model decides on, with Clamped the time since the epoch,
// clamped to [MinStamp + window, MaxStamp].
func TestSlidingLogNewestAndNow(t *testing.T) {
	m := NewSlidingLog(2, time.Second)
	_, logged := m.Newest("k")
	assert.Zero(t, logged)
	require.True(t, m.Take("k", 2, 7).Allowed)
	newest, logged := m.Newest("k")
	assert.Equal(t, int64(7), newest)
	assert.Equal(t, 2, logged)
	assert.Equal(t, int64(-5), m.Now(-5))

	const epoch = int64(1) << 62
	c := NewSlidingLog(2, time.Second).Clamped(epoch)
	assert.Equal(t, int64(3), c.Now(epoch+3))
	assert.Equal(t, int64(slidingLogMaxStamp), c.Now(1<<63-1))
	assert.Equal(t, int64(slidingLogMinStamp)+int64(time.Second), c.Now(-1<<63))
	require.True(t, c.Take("k", 1, epoch+3).Allowed)
	newest, _ = c.Newest("k")
	assert.Equal(t, int64(3), newest, "a time since the epoch")
}
