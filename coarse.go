package hotlimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// CoarseClock is an opt-in cheaper [Clock]: one goroutine stores the monotonic
// time every resolution, and Now is a single atomic load instead of a clock
// read. A decision is often half clock read; with a coarse clock it is mostly
// the map load and the CAS.
//
// The trade-off is accuracy: while running, Now lags the monotonic clock by up
// to the resolution (plus scheduling delay), so a limiter sees time advance in
// steps of about the resolution. Refills and window edges land up to that much
// late: a limiter never admits more than its model allows at the time Now
// reports, but it may admit a request up to one resolution later than a
// precise clock would. Choose a resolution well below the smallest Window
// (for example 1 ms for windows of a second or more).
//
// One CoarseClock serves any number of limiters: pass WithClock(c.Now) to
// each. It never decreases. Before Start and after Stop, Now reads the
// monotonic clock directly, so a stopped clock is never stale.
type CoarseClock struct {
	resolution time.Duration
	now        atomic.Int64 // 0 while stopped

	mu   sync.Mutex // guards stop across Start and Stop
	stop chan struct{}
	done chan struct{}
}

// NewCoarseClock returns a stopped clock that, once started, advances every
// resolution. A resolution below 50µs is raised to 50µs.
func NewCoarseClock(resolution time.Duration) *CoarseClock {
	return &CoarseClock{resolution: max(resolution, 50*time.Microsecond)}
}

// Resolution returns the interval at which the running clock advances.
func (c *CoarseClock) Resolution() time.Duration { return c.resolution }

// Start starts the goroutine that advances the clock. Starting a running clock
// does nothing.
func (c *CoarseClock) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		return
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	c.now.Store(max(Monotonic(), 1))
	go c.run(c.stop, c.done)
}

// Stop stops the goroutine and waits for it to end; Now then reads the
// monotonic clock directly. Stopping a stopped clock does nothing.
func (c *CoarseClock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == nil {
		return
	}
	close(c.stop)
	<-c.done
	c.stop, c.done = nil, nil
	c.now.Store(0)
}

// Now returns the time, in nanoseconds on the [Monotonic] scale. It is a
// [Clock].
func (c *CoarseClock) Now() int64 {
	if t := c.now.Load(); t != 0 {
		return t
	}
	return Monotonic()
}

func (c *CoarseClock) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(c.resolution)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.now.Store(max(Monotonic(), 1))
		}
	}
}
