package tokenbucket

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestCapWalkAcrossACompletedSweep: a key cap's walk judges its keys under
// the wrap guard's generation it read with its clock; a Sweep that started
// earlier, while the held key was still in use, completes during the walk
// and records a new generation. The walk must judge the key again under the
// new one, find it idle, and make room: the new key passes, as WithMaxKeys
// promises while an idle key is held. (Judging nothing once its generation
// has passed, the walk evicted nothing and the new key was denied.)
func TestCapWalkAcrossACompletedSweep(t *testing.T) {
	for _, autoSweep := range []int{0, 1} {
		var now atomic.Int64
		now.Store(int64(time.Hour))
		l, err := New(1, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1), hotlimit.WithAutoSweep(autoSweep))
		require.NoError(t, err)
		require.True(t, l.Allow("a")) // drained
		now.Add(int64(2 * time.Second))
		// a is full, idle. When the walk for b loads a's word, a Sweep that
		// read its clock before a filled (stalled since) runs to the end:
		// it keeps a, in use at its time, and records its generation.
		var raced bool
		l.sweepLoaded = func() {
			if raced {
				return
			}
			raced = true
			before := l.swept.Load()
			assert.Zero(t, l.sweep(uint64(int64(500*time.Millisecond))), "a was in use at the Sweep's time")
			require.NotEqual(t, before, l.swept.Load(), "the Sweep recorded a new generation")
		}
		assert.True(t, l.Allow("b"), "autosweep=%d: a, idle, made room for b", autoSweep)
		assert.True(t, raced, "the Sweep completed during the walk")
		assert.Equal(t, 1, l.Len())
		_, held := l.cells.Peek("a")
		assert.False(t, held, "a was evicted")
	}
}

// TestSweepAcrossACompletedSweep: Sweep evicts every key full at the clock's
// time, even when another Sweep, started earlier while the keys were in use,
// completes during it and records a new generation. (Stopping where it
// noticed the new generation, it evicted none of them.)
func TestSweepAcrossACompletedSweep(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	l, err := New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c"} {
		require.True(t, l.Allow(k)) // drained
	}
	now.Add(int64(2 * time.Second)) // all full, idle
	var raced bool
	l.sweepLoaded = func() {
		if raced {
			return
		}
		raced = true
		before := l.swept.Load()
		assert.Zero(t, l.sweep(uint64(int64(500*time.Millisecond))), "the keys were in use at the other Sweep's time")
		require.NotEqual(t, before, l.swept.Load(), "the other Sweep recorded a new generation")
	}
	assert.Equal(t, 3, l.Sweep(), "every key full at the Sweep's time")
	assert.True(t, raced, "the other Sweep completed during this one")
	assert.Zero(t, l.Len())
}

// TestSweepCountsTheKeysOfEveryPass: Sweep returns every key it evicted,
// those of a pass that another Sweep overtook as well as those of the pass
// it ran again under the new generation. Three keys, full and idle; the
// other Sweep (started earlier, while they were in use) completes after
// this one evicted the first and loaded the second.
func TestSweepCountsTheKeysOfEveryPass(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	l, err := New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c"} {
		require.True(t, l.Allow(k)) // drained
	}
	now.Add(int64(2 * time.Second)) // all full, idle
	loads, raced := 0, false
	l.sweepLoaded = func() {
		if loads++; loads != 2 {
			return
		}
		raced = true
		assert.Zero(t, l.sweep(uint64(int64(500*time.Millisecond))), "the keys were in use at the other Sweep's time")
	}
	assert.Equal(t, 3, l.Sweep(), "one key in the overtaken pass, two in the next")
	assert.True(t, raced)
	assert.Zero(t, l.Len())
}

// TestDeadCellStillMappedIsDeleted: a cell killed but still mapped (a
// filling Refund's or another Sweep's kill, its deletion yet to land) is
// deleted by the next Sweep, which counts it, and makes room under
// hotlimit.WithMaxKeys for a new key.
func TestDeadCellStillMappedIsDeleted(t *testing.T) {
	for _, capped := range []bool{false, true} {
		var now atomic.Int64
		now.Store(int64(time.Hour))
		maxKeys := 0
		if capped {
			maxKeys = 1
		}
		l, err := New(1, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(maxKeys))
		require.NoError(t, err)
		require.True(t, l.Allow("a")) // drained: not idle
		l.cells.Load("a").word.Store(packed.BucketDead)
		if capped {
			assert.True(t, l.Allow("b"), "the dead cell made room")
			_, held := l.cells.Peek("a")
			assert.False(t, held)
		} else {
			assert.Equal(t, 1, l.Sweep())
		}
		assert.Equal(t, map[bool]int{false: 0, true: 1}[capped], l.Len())
	}
}

// TestSweepKeepsAKeyWrittenAfterItsLoad: a sweep kills a word only by CAS
// from the value it judged, so an admission that lands between its Load of
// a full word and its kill keeps the key, drained: the sweep judges the new
// word again, and a drained bucket is not full. At 1 per second with a
// burst of 1, the next request is denied.
func TestSweepKeepsAKeyWrittenAfterItsLoad(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	l, err := New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, l.Allow("k"))
	now.Add(int64(2 * time.Second)) // full, idle
	landed := false
	l.sweepLoaded = func() {
		if landed {
			return
		}
		landed = true
		require.True(t, l.Allow("k"), "the admission between the Load and the kill")
	}
	assert.Zero(t, l.Sweep())
	require.True(t, landed)
	l.sweepLoaded = nil
	assert.Equal(t, 1, l.Len(), "k kept")
	assert.False(t, l.Allow("k"), "k drained a moment ago")
}
