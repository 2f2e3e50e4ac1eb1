package tokenbucket

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

func TestSweepEvictsOnlyFullKeys(t *testing.T) {
	var now atomic.Int64
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("one"))
	require.True(t, lim.Take("all", 5).Allowed)
	lim.Take("never", 0) // reports never insert
	lim.Take("never", 6)
	assert.Equal(t, 2, lim.Len())
	assert.Zero(t, lim.Sweep(), "nothing is full")

	now.Store(int64(200*time.Millisecond) - 1)
	assert.Zero(t, lim.Sweep(), "\"one\" is 1 ns short of full")
	now.Store(int64(200 * time.Millisecond))
	assert.Equal(t, 1, lim.Sweep())
	assert.Equal(t, 1, lim.Len())
	_, ok := lim.cells.Peek("one")
	assert.False(t, ok)
	assert.Equal(t, 5, lim.Take("one", 0).Remaining, "an evicted key reports fresh")

	now.Store(int64(time.Second))
	assert.Equal(t, 1, lim.Sweep())
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep())
	assert.True(t, lim.Take("all", 5).Allowed, "an evicted key starts full")
}

// TestSweepChangesNoDecision: with a clock that never goes back, Sweeps
// interleaved anywhere change no decision: the model here never evicts.
func TestSweepChangesNoDecision(t *testing.T) {
	seqs := 200
	if testing.Short() {
		seqs = 40
	}
	keys := []string{"a", "b", "c", "d"}
	for ci, cfg := range diffConfigs {
		burst := burstOf(cfg.limit, cfg.burst)
		t.Run(fmt.Sprintf("limit=%d/window=%v/burst=%d", cfg.limit, cfg.window, burst), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 21))
			evicted := 0
			for seq := range seqs {
				tw := newBurstTwin(t, cfg.limit, burst, cfg.window, r.Int64N(1e15), time.Millisecond)
				tw.others = true
				for i := range 120 {
					step := randomStep(r, cfg.limit, cfg.window, time.Millisecond)
					if step < 0 || tw.now.Load()+int64(step)-tw.m.Epoch > tw.lim.soft/2 {
						continue
					}
					tw.now.Add(int64(step))
					if r.IntN(4) == 0 {
						evicted += tw.lim.Sweep()
					}
					tw.take(keys[r.IntN(len(keys))], randomN(r, burst), r.IntN(2) == 0, false, fmt.Sprintf("seq %d step %d", seq, i))
					if t.Failed() {
						return
					}
				}
			}
			assert.Positive(t, evicted)
		})
	}
}

func TestAutoSweep(t *testing.T) {
	var now atomic.Int64
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithAutoSweep(100))
	require.NoError(t, err)
	for i := range 1000 {
		require.True(t, lim.Allow("old-"+strconv.Itoa(i)))
	}
	assert.Equal(t, 1000, lim.Len(), "none is full yet")
	now.Add(int64(time.Second)) // every old key is full again
	for i := range 1000 {
		require.True(t, lim.Allow("new-"+strconv.Itoa(i)))
	}
	assert.Less(t, lim.Len(), 1100, "the old keys were swept as new ones came")
	for i := range 1000 {
		assert.Equal(t, 5, lim.Take("old-"+strconv.Itoa(i), 0).Remaining)
	}
}

// TestSweepKeepsABurstKeyIdleForAWindow: with a burst above the limit, a key
// idle for a window is not full yet: it fills in Burst·Window/Limit, and only
// then is it evicted.
func TestSweepKeepsABurstKeyIdleForAWindow(t *testing.T) {
	var now atomic.Int64
	lim, err := New(1, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(3))
	require.NoError(t, err)
	require.True(t, lim.Take("k", 3).Allowed)
	now.Store(int64(time.Second))
	assert.Zero(t, lim.Sweep(), "a window later: 1 token of 3")
	now.Store(int64(3*time.Second) - 1)
	assert.Zero(t, lim.Sweep(), "1 ns short of the fill time")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, Remaining: 2, ResetAfter: 1}, lim.Take("k", 0))
	now.Store(int64(3 * time.Second))
	assert.Equal(t, 1, lim.Sweep(), "full at the fill time")
	assert.Zero(t, lim.Len())
}
