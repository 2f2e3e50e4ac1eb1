package tokenbucket

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// stallClock is a fake clock that can hand one caller a stale reading: once
// armed, the next call signals read, blocks until release is closed, and
// returns at, as a caller that read the clock at at and stalled before using
// the reading. Every other call returns now.
type stallClock struct {
	now     atomic.Int64
	armed   atomic.Bool
	at      int64
	read    chan struct{}
	release chan struct{}
}

func (c *stallClock) clock() int64 {
	if c.armed.CompareAndSwap(true, false) {
		close(c.read)
		<-c.release
		return c.at
	}
	return c.now.Load()
}

// arm makes the next call return at, once release is closed.
func (c *stallClock) arm(at int64) {
	c.at = at
	c.read = make(chan struct{})
	c.release = make(chan struct{})
	c.armed.Store(true)
}

// TestSweepRacingStalledWriterKeepsGuard forces the race the wrap guard's
// lower bound must survive: a caller reads the clock at t0 and stalls; the
// clock moves on; a sweep starts at s, with t0 more than Range/4 before s,
// and Loads the key's word, full at s; the caller's admission lands right
// then (forced by the sweep hook), writing timestamp t0; only then does the
// sweep try to kill the word. The sweep must not record generation s while
// that word lives: a later reader at t0 + Range or more would read its
// timestamp as a clock step back, refill nothing, and deny a key idle for
// more than a fill time. So the reader must find the key full.
//
// allFull: the sweep starts a whole guard span past its generation and
// kills every word unread; judged: it reads each word and kills the full
// ones.
func TestSweepRacingStalledWriterKeepsGuard(t *testing.T) {
	for _, allFull := range []bool{true, false} {
		name := map[bool]string{true: "sweep=allFull", false: "sweep=judged"}[allFull]
		t.Run(name, func(t *testing.T) {
			clk := new(stallClock)
			lim, err := New(1, 24*time.Hour, hotlimit.WithBurst(2), hotlimit.WithClock(clk.clock))
			require.NoError(t, err)
			rng, fill := int64(lim.b.Range()), lim.fill
			t0 := int64(time.Hour)

			var s, reader int64
			if allFull {
				// Generation 0; the stalled caller inserts the key.
				s = t0 + rng + rng/8
				reader = s
			} else {
				// The key, admitted at t0, survives a sweep at g (not full
				// yet), which becomes the generation the stalled caller
				// reads under.
				clk.now.Store(t0)
				require.True(t, lim.Allow("k"))
				g := t0 + fill/4
				clk.now.Store(g)
				require.Zero(t, lim.Sweep())
				require.Equal(t, g, lim.swept.Load())
				require.Equal(t, 1, lim.Len())
				s = t0 + 3*rng/4 + fill/8
				reader = t0 + rng + fill/16
				require.Less(t, s-g-fill, lim.hard, "the sweep at s judges words")
			}
			require.Greater(t, s-t0, lim.back, "t0 is more than Range/4 before s")
			require.GreaterOrEqual(t, reader-t0, rng, "the reader is Range or more after t0")
			require.Less(t, reader-s, lim.soft, "the reader starts no sweep")

			// The caller: Allow at a clock reading t0 it stalls on.
			clk.arm(t0)
			result := make(chan bool, 1)
			go func() { result <- lim.Allow("k") }()
			<-clk.read
			clk.now.Store(s)

			// The sweep at s: after its first Load, the caller goes on and
			// its admission lands before the sweep judges the word.
			landed := false
			lim.sweepLoaded = func() {
				if landed {
					return
				}
				close(clk.release)
				require.True(t, <-result, "the stalled caller is admitted")
				landed = true
			}
			lim.Sweep()
			require.True(t, landed, "the admission landed inside the sweep")
			require.Equal(t, s, lim.swept.Load(), "the sweep recorded its generation")

			// Every word left must be within Range/4 before s, or full.
			if c, ok := lim.cells.Peek("k"); ok {
				tokens, _ := lim.b.Unpack(c.word.Load())
				assert.Equal(t, lim.b.Cap, tokens, "a word written at t0 outlived the sweep at s")
			}

			// The key has been idle for far more than a fill time: full.
			clk.now.Store(reader)
			d := lim.Take("k", 0)
			assert.Equal(t, 2, d.Remaining, "idle since t0")
			assert.Zero(t, d.ResetAfter, "idle since t0")
			assert.True(t, lim.Take("k", 2).Allowed, "idle since t0")
		})
	}
}

// TestSweepRacingRefundAndStalledWriterKeepsGuard forces the other way a
// word older than a sweep's bound could outlive it: the sweep at s judges the
// key's word not full and keeps it (its timestamp is recent); right after, a
// Refund fills the bucket, and a caller that read the clock at t0, more than
// Range/4 before s, and stalled, admits from the full word: a full word's
// timestamp is never read, so the admission writes its own reading t0. The
// later reader must still find the key full once it has been idle for a
// fill time.
func TestSweepRacingRefundAndStalledWriterKeepsGuard(t *testing.T) {
	clk := new(stallClock)
	lim, err := New(1, 24*time.Hour, hotlimit.WithBurst(2), hotlimit.WithClock(clk.clock))
	require.NoError(t, err)
	// As if a background sweep were running: no caller starts one, and the
	// test runs every sweep itself.
	lim.sweeping.Store(true)
	rng, fill := int64(lim.b.Range()), lim.fill
	t0 := int64(time.Hour)

	g := t0 + fill/2
	clk.now.Store(g)
	require.Zero(t, lim.Sweep())
	require.Equal(t, g, lim.swept.Load())
	s := g + lim.hard - fill/8
	drained := s - fill/2 // not full at s
	reader := t0 + rng + fill/16
	require.Less(t, drained-g, lim.hard, "the drain sweeps nothing")
	require.Less(t, s-g, lim.hard, "callers at s sweep nothing; the sweep at s judges words")
	require.Greater(t, s-t0, lim.back, "t0 is more than Range/4 before s")
	require.GreaterOrEqual(t, reader-t0, rng, "the reader is Range or more after t0")
	require.Less(t, reader-s, lim.hard, "the reader sweeps nothing")

	clk.now.Store(drained)
	d, receipt := lim.TakeReceipt("k", 2)
	require.True(t, d.Allowed)
	require.Equal(t, g, lim.swept.Load())

	clk.arm(t0)
	result := make(chan bool, 1)
	go func() { result <- lim.Allow("k") }()
	<-clk.read
	clk.now.Store(s)

	landed, entered := false, false
	lim.sweepLoaded = func() {
		if entered {
			return
		}
		entered = true
		lim.Refund("k", receipt)
		require.Equal(t, 2, lim.Take("k", 0).Remaining, "the refund fills the bucket")
		close(clk.release)
		require.True(t, <-result, "the stalled caller is admitted")
		landed = true
	}
	assert.Zero(t, lim.Sweep(), "the sweep judged the word before the refund: not full")
	require.True(t, landed, "the refund and the admission landed inside the sweep")
	require.Equal(t, s, lim.swept.Load(), "the sweep recorded its generation")

	clk.now.Store(reader)
	d = lim.Take("k", 0)
	assert.Equal(t, 2, d.Remaining, "idle since before s")
	assert.Zero(t, d.ResetAfter, "idle since before s")
	assert.True(t, lim.Take("k", 2).Allowed, "idle since before s")
	require.Equal(t, s, lim.swept.Load(), "no sweep ran after s")
}
