package limitertest

import "sync/atomic"

// PanicClock is a fake clock that panics with PanicValue while armed: a
// user's clock failing partway through a decision, so that a test can check
// what a limiter asked before it kept. Arm and disarm it from the test's
// goroutine, between calls.
type PanicClock struct {
	Now   atomic.Int64
	armed atomic.Bool
}

// PanicValue is what an armed PanicClock panics with.
const PanicValue = "limitertest: the clock panics"

// Read is the clock: Now, or a panic while armed.
func (c *PanicClock) Read() int64 {
	if c.armed.Load() {
		panic(PanicValue)
	}
	return c.Now.Load()
}

// Arm makes Read panic when on is set, and read Now again when it is not.
func (c *PanicClock) Arm(on bool) { c.armed.Store(on) }

// Recovered runs f and returns what it panicked with, nil when it returned.
func Recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
