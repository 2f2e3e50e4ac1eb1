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

// TestKillChecksEverySlot: a rollback can leave the newest claim's slot older
// than an earlier one; Sweep must still keep a key with a request in the
// window.
func TestKillChecksEverySlot(t *testing.T) {
	l, now := newTest(t, 3)
	now.Store(int64(time.Hour))
	t0 := now.Load()
	require.True(t, l.Take("k", 2).Allowed)
	c, _ := l.cells.Peek("k")
	l.rollback(c, 1, 1, t0) // claim 1 taken back: slot 1 goes to t0 − Window
	now.Add(int64(500 * time.Millisecond))
	assert.Zero(t, l.Sweep(), "claim 0 is still in the window")
	assert.False(t, c.kill(now.Load(), l.window))
	now.Store(t0 + l.window)
	assert.Equal(t, 1, l.Sweep())
}

// TestRollbackRestoresCapacity: a claim taken back passes again from its
// time on, and a rollback never changes a slot another claim took since.
func TestRollbackRestoresCapacity(t *testing.T) {
	l, now := newTest(t, 1)
	now.Store(int64(time.Hour))
	t0 := now.Load()
	require.True(t, l.Allow("k"))
	c, _ := l.cells.Peek("k")
	l.rollback(c, 0, 1, t0)
	assert.True(t, l.Allow("k"), "the slot passes again at t0")
	assert.False(t, l.Allow("k"))
	before := c.load(0)
	l.rollback(c, 0, 1, t0) // claim 0's stamp is gone: nothing happens
	assert.Equal(t, before, c.load(0))
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
