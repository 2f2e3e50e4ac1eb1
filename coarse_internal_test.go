package hotlimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoarseClockStartStalledNeverGoesBack forces the race in which Start reads
// the time, stalls, and a reader of the stopped clock reads a later time before
// Start publishes its reading. The reader's next Now must not be earlier.
func TestCoarseClockStartStalledNeverGoesBack(t *testing.T) {
	var src atomic.Int64
	src.Store(100)
	stall := make(chan struct{})
	var stalled sync.Once
	reached := make(chan struct{})
	c := NewCoarseClock(time.Hour) // no tick during the test
	c.source = func() int64 {
		v := src.Load()
		if v == 100 {
			// Start's reading: hand control to the reader, then publish.
			stalled.Do(func() { close(reached); <-stall })
		}
		return v
	}

	started := make(chan struct{})
	go func() { c.Start(); close(started) }()
	<-reached
	src.Store(200)
	seen := c.Now() // the clock is not running yet: a direct reading
	require.EqualValues(t, 200, seen)
	close(stall)
	<-started
	defer c.Stop()
	assert.GreaterOrEqual(t, c.Now(), seen, "Start published an older reading than one Now returned")
}

// TestCoarseClockStopStartNeverGoesBack hammers Start and Stop while readers
// check that each sees a non-decreasing time.
func TestCoarseClockStopStartNeverGoesBack(t *testing.T) {
	c := NewCoarseClock(50 * time.Microsecond)
	cycles := 20000
	if testing.Short() {
		cycles = 2000
	}
	var done atomic.Bool
	var back atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			prev := c.Now()
			for !done.Load() {
				now := c.Now()
				if now < prev {
					back.Add(1)
				}
				prev = now
			}
		})
	}
	for range cycles {
		c.Start()
		c.Stop()
	}
	done.Store(true)
	wg.Wait()
	assert.Zero(t, back.Load(), "steps back seen by readers")
}
