package limitertest

import (
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
)

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

// PanicRefunder is a Refunder whose Refund panics with PanicValue while
// armed, giving nothing back: a limiter of the caller's own failing in the
// give-back of a request another limiter denied, or that another limiter's
// panic left undecided. Arm and disarm it from the test's goroutine,
// between calls.
type PanicRefunder struct {
	hotlimit.Refunder
	armed atomic.Bool
}

// Refund panics while armed, else gives r back.
func (p *PanicRefunder) Refund(key string, r hotlimit.Receipt) {
	if p.armed.Load() {
		panic(PanicValue)
	}
	p.Refunder.Refund(key, r)
}

// Arm makes Refund panic when on is set, and give back again when it is not.
func (p *PanicRefunder) Arm(on bool) { p.armed.Store(on) }
