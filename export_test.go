package hotlimit

import "time"

// NewCoarseClockOn returns a stopped coarse clock of the given resolution
// that reads source instead of the monotonic clock, so that a test decides
// every reading it publishes.
func NewCoarseClockOn(resolution time.Duration, source Clock) *CoarseClock {
	c := NewCoarseClock(resolution)
	c.source = source
	return c
}

// Tick publishes a reading of the source, as the running clock's goroutine
// does at each tick.
func (c *CoarseClock) Tick() { c.raise(c.read()) }

// SleepTimer is the default sleep of Wait and WaitN.
var SleepTimer = sleepTimer
