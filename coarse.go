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
// The trade-off is accuracy. While running, Now lags the monotonic clock by up
// to the resolution plus the ticker goroutine's scheduling delay, the lag, so
// a limiter sees time advance in steps of about the resolution. It decides
// each request exactly as its model does at the time Now reported, up to one
// lag before the request: it never admits more than its model allows at that
// time. Judged on the requests' real times, the error goes both ways. A refill
// or a window's end reaches a request up to one lag late, so a request may be
// turned away up to one lag longer than on a precise clock. And a request
// stamped up to one lag early leaves its window, or is refilled, that much
// early, so over any span of real time a key passes at most what its model
// allows over the span lengthened by one lag, which can be more than over the
// span itself: a sliding log of 1 per second passes two requests 999.1 ms
// apart when the first was stamped 0.9 ms early, and a fixed window counts a
// request made just after a window's end in the window that ended, leaving
// the next window its whole limit. A starved ticker goroutine stops time for
// as long as it is starved, and the lag is then the starvation: limiters admit
// less while it lasts, and afterwards up to the starvation's worth more, as
// the requests it stamped early leave their windows early. Choose a resolution
// well below the smallest Window (for example 1 ms for windows of a second or
// more), and keep the monotonic clock where a limit must hold over real time.
//
// One CoarseClock serves any number of limiters: pass WithClock(c.Now) to
// each. It never decreases, across Start and Stop too: every value Now returns
// is at least every value it returned before, in any goroutine. Before Start
// and after Stop, Now reads the monotonic clock, so a stopped clock is never
// stale; each such read also costs a compare-and-swap on the shared word.
//
// The zero CoarseClock is ready to use: a stopped clock of the least
// resolution, as NewCoarseClock(0) returns. A nil *CoarseClock is not: its
// methods panic, as methods on a nil pointer do.
//
// In a testing/synctest bubble, create and Start the clock in the bubble,
// and Stop it before the bubble's function returns: it then ticks on the
// bubble's fake clock, from the bubble's 0. A clock left running fails
// synctest.Test ("main bubble goroutine has exited but blocked goroutines
// remain", naming CoarseClock.run), as the bubble waits for every goroutine
// started in it. A clock started outside the bubble keeps the real time
// there, which the bubble's time.Sleep does not advance.
type CoarseClock struct {
	resolution time.Duration // 0 in the zero value: minCoarseResolution
	source     Clock         // Monotonic, or nil for it in the zero value; tests stall it

	// word is the latest time published, shifted left by one, with bit 0 set
	// while the ticker runs:
	//
	//	| time, ns on the source's scale (63 bits) | running (1 bit) |
	//
	// The time part only grows: every writer (Start, the ticker, and Now
	// while stopped) raises it by CAS to a reading it took and never lowers
	// it. Every value Now returns is the time part at some instant (the load
	// that read it, or the CAS or load in raise), so values returned in any
	// order of goroutines never decrease. The running bit changes only in
	// Start and Stop, under mu, by CAS, keeping the time part.
	word atomic.Int64

	mu   sync.Mutex // guards stop across Start and Stop
	stop chan struct{}
	done chan struct{}
}

const coarseRunning = 1

// minCoarseResolution is the least resolution of a CoarseClock.
const minCoarseResolution = 50 * time.Microsecond

// NewCoarseClock returns a stopped clock that, once started, advances every
// resolution. A resolution below 50µs is raised to 50µs.
func NewCoarseClock(resolution time.Duration) *CoarseClock {
	return &CoarseClock{resolution: max(resolution, minCoarseResolution), source: Monotonic}
}

// Resolution returns the interval at which the running clock advances.
func (c *CoarseClock) Resolution() time.Duration { return max(c.resolution, minCoarseResolution) }

// read takes a reading of the source clock: Monotonic in the zero value.
func (c *CoarseClock) read() int64 {
	if c.source == nil {
		return Monotonic()
	}
	return c.source()
}

// Start starts the goroutine that advances the clock. Starting a running clock
// does nothing. The goroutine runs until Stop: a clock that is started and
// then dropped without Stop keeps it, and itself, for the life of the process.
func (c *CoarseClock) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		return
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	t := c.read()
	// Set the running bit and raise the time to t at once. A reader of the
	// stopped clock may have published a later reading since t was read:
	// the CAS keeps that one, so the first running value is never below a
	// value already returned.
	for {
		old := c.word.Load()
		if c.word.CompareAndSwap(old, max(old>>1, t)<<1|coarseRunning) {
			break
		}
	}
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
	// Clear the running bit, keeping the time: readers now take readings of
	// their own and raise the time from here.
	for {
		old := c.word.Load()
		if c.word.CompareAndSwap(old, old&^coarseRunning) {
			break
		}
	}
}

// Now returns the time, in nanoseconds on the [Monotonic] scale. It is a
// [Clock].
func (c *CoarseClock) Now() int64 {
	if w := c.word.Load(); w&coarseRunning != 0 {
		return w >> 1
	}
	return c.raise(c.read())
}

// raise makes the published time at least t and returns the published time,
// t or a later one another writer published first. The CAS keeps the running
// bit and never lowers the time: a concurrent raise to a later time makes
// this one return that later time instead.
func (c *CoarseClock) raise(t int64) int64 {
	for {
		old := c.word.Load()
		if old>>1 >= t {
			return old >> 1
		}
		if c.word.CompareAndSwap(old, t<<1|old&coarseRunning) {
			return t
		}
	}
}

func (c *CoarseClock) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(c.Resolution())
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.raise(c.read())
		}
	}
}
