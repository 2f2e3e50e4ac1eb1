package hotlimit_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
)

// TestCoarseClockStartStopLeavesNoGoroutine: a CoarseClock started twice
// and stopped twice, 1,000 times over, runs one goroutine at a time and
// leaves none: a second Start does nothing, so the first Stop ends the only
// goroutine. It counts the goroutines of the process: it must not run in
// parallel with other tests.
func TestCoarseClockStartStopLeavesNoGoroutine(t *testing.T) {
	c := hotlimit.NewCoarseClock(time.Millisecond)
	base := runtime.NumGoroutine()
	for range 1000 {
		c.Start()
		c.Start() // running: does nothing
		c.Now()
		c.Stop()
		c.Stop() // stopped: does nothing
	}
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base, "goroutines left by 1,000 Start/Stop pairs")
}
