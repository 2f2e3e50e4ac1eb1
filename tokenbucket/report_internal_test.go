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

// TestReportReadsDeadCellAsFresh: between a sweep's kill and its delete, a
// key maps to a dead cell. A report (Take with n = 0, n > burst or n < 0)
// that finds it must answer at once, as for a fresh key (the killed bucket
// was full, which is what a fresh key holds), without waiting for the
// sweeper to delete the cell, and without changing anything.
func TestReportReadsDeadCellAsFresh(t *testing.T) {
	var now atomic.Int64
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Take("k", 5).Allowed)
	now.Store(int64(time.Second)) // full again

	// The sweep's kill, without the delete that follows it.
	c, ok := lim.cells.Peek("k")
	require.True(t, ok)
	tt, gen, _ := lim.read()
	s, _ := lim.b.Units(tt)
	killed, current := lim.kill(c, gen, s, false)
	require.True(t, current)
	require.True(t, killed)

	ns := []int{0, 6, -1}
	done := make(chan []hotlimit.Decision, 1)
	go func() {
		var ds []hotlimit.Decision
		for _, n := range ns {
			ds = append(ds, lim.Take("k", n))
		}
		done <- ds
	}()
	var got []hotlimit.Decision
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a report waits for the sweeper to delete a dead cell")
	}
	for i, n := range ns {
		assert.Equal(t, lim.Take("fresh", n), got[i], "Take(%d) of a dead cell reads a fresh key's state", n)
	}
	d, ok := lim.cells.Peek("k")
	assert.True(t, ok, "a report deletes nothing")
	assert.Same(t, c, d, "a report revives nothing")
	assert.Equal(t, packed.BucketDead, c.word.Load())
	_, ok = lim.cells.Peek("fresh")
	assert.False(t, ok, "a report inserts nothing")
}
