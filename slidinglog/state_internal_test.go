package slidinglog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

func newTest(t *testing.T, limit int) (*Limiter, *atomic.Int64) {
	t.Helper()
	now := new(atomic.Int64)
	l, err := New(limit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	return l, now
}

func TestFreshSlotIsZero(t *testing.T) {
	assert.Equal(t, packed.PackStamp(packed.MinStamp, 1), freshStamp)
	c := &cell{slots: make([]atomic.Int64, 3)}
	s, ok := c.read()
	require.True(t, ok)
	assert.Equal(t, freshStamp, s.v)
	assert.False(t, s.pending(), "round 0 finds a fresh slot unclaimed")
	assert.Equal(t, int64(packed.MinStamp), s.newest)
}

// TestStalledClaimIsCompleted: a claimer that wrote its slot and stalled
// before advancing the head blocks nobody: the next caller advances the head
// for it, and the stalled claim counts against the limit.
func TestStalledClaimIsCompleted(t *testing.T) {
	l, now := newTest(t, 2)
	now.Store(int64(time.Hour))
	c := l.cells.Get("k")
	require.True(t, c.cas(0, freshStamp, packed.PackStamp(now.Load(), 0))) // claim 0, head still 0
	assert.True(t, l.Allow("k"), "claim 1")
	assert.False(t, l.Allow("k"), "the stalled claim and claim 1 fill the log")
	assert.Equal(t, uint64(2), c.head.Load())
}

// TestStaleCASFails: a claimer that read the slot under head h and stalled
// while the ring went round cannot land its CAS: the slot never holds the
// same value twice.
func TestStaleCASFails(t *testing.T) {
	l, now := newTest(t, 1)
	c := l.cells.Get("k")
	now.Store(int64(time.Hour))
	stale, ok := c.read()
	require.True(t, ok)
	for range 4 {
		require.True(t, l.Allow("k"))
		now.Add(int64(time.Second))
	}
	assert.False(t, c.cas(stale.i, stale.v, packed.PackStamp(now.Load(), stale.round)))
}

// TestKillNeedsTheNewestExpired: a key with any request in the window is
// kept; one whose newest request has left it is evicted.
func TestKillNeedsTheNewestExpired(t *testing.T) {
	l, now := newTest(t, 3)
	now.Store(int64(time.Hour))
	t0 := now.Load()
	require.True(t, l.Allow("k"))
	now.Add(int64(300 * time.Millisecond))
	require.True(t, l.Allow("k"))
	c, _ := l.cells.Peek("k")
	now.Store(t0 + l.window) // the first has left the window, the second not
	assert.False(t, c.kill(now.Load(), l.window))
	assert.Zero(t, l.Sweep())
	now.Add(int64(300 * time.Millisecond))
	assert.Equal(t, 1, l.Sweep())
}

// TestReportRacingSweepReadsFresh: a report that reads a live head and then
// meets the tombstone a Sweep just wrote answers for a fresh key.
func TestReportRacingSweepReadsFresh(t *testing.T) {
	l, now := newTest(t, 4)
	now.Store(int64(time.Hour))
	require.True(t, l.Take("k", 2).Allowed)
	c, _ := l.cells.Peek("k")
	h := c.head.Load()
	now.Add(int64(2 * time.Second))
	require.True(t, c.kill(now.Load(), l.window))
	assert.Equal(t, uint64(4), l.free(c, h, now.Load()))
}

func TestKillSparesClaimInFlight(t *testing.T) {
	l, now := newTest(t, 2)
	now.Store(int64(time.Hour))
	c := l.cells.Get("k")
	require.True(t, c.cas(0, freshStamp, packed.PackStamp(0, 0))) // claim 0 at time 0, head still 0
	assert.False(t, c.kill(now.Load(), l.window), "a claim in flight keeps the key")
	c.head.Store(1)
	assert.True(t, c.kill(now.Load(), l.window))
	assert.Equal(t, int64(packed.StampDead), c.load(1))
}

// TestTakeNChecksTheHeadToo: Take with n > 1 decides on the n-th oldest entry
// and claims from the head on; a refund can make the n-th claimable while the
// head's entry is still in the window (refunds mark the oldest counted
// entries, but a concurrent one may land out of that order, as built here by
// hand). Take must not replace the head's live entry: limit 3, claims 0 and 2
// in the window, claim 1 refunded.
func TestTakeNChecksTheHeadToo(t *testing.T) {
	l, now := newTest(t, 3)
	now.Store(int64(10 * time.Second))
	require.True(t, l.Allow("k")) // claim 0, slot 0
	require.True(t, l.Allow("k")) // claim 1, slot 1
	c := l.cells.Get("k")
	v := c.load(1)
	require.True(t, c.cas(1, v, packed.Refunded(v)))
	require.True(t, l.Allow("k")) // claim 2, slot 2
	require.EqualValues(t, 3, c.head.Load())

	d := l.Take("k", 2)
	assert.False(t, d.Allowed, "2 counted in the window, limit 3: 2 more would make 4")
	assert.Equal(t, time.Second, d.RetryAfter, "the head's own entry leaves the window in a second")
	now.Add(int64(time.Second))
	assert.True(t, l.Take("k", 3).Allowed)
}
