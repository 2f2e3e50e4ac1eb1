package redislimit

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
)

// breaker stops calls to a failing Redis; see WithBreaker. The zero value
// with threshold 0 never opens.
type breaker struct {
	threshold int64
	cooldown  int64 // ns
	// fails counts Redis errors since the last success.
	fails atomic.Int64
	// openUntil is 0 while closed, else the time (of breakerNow) until
	// which no call goes to Redis.
	openUntil atomic.Int64
	// seen is, for the breaker of a cluster's node, when a key last mapped
	// to the node, in ticks of the limiter's localNow, as of nodeIdle/4
	// ago at most; see Limiter.nodeBreaker.
	seen atomic.Int64
}

// nodeIdle is how long the breaker of a cluster's node outlives the last
// key that mapped to the node, and its cooldown if open: a master that a
// failover replaced, or that a resharding left without slots, is forgotten
// after it, and starts with a closed breaker should its address come back.
const nodeIdle = time.Minute

// breakerClock, when set (by tests), replaces
// hotlimit.Monotonic as the breakers' clock, so that a test ends a
// cooldown by moving it rather than by waiting.
var breakerClock atomic.Pointer[func() int64]

// breakerNow reads the breakers' clock: hotlimit.Monotonic, unless a test
// set breakerClock.
func breakerNow() int64 {
	if now := breakerClock.Load(); now != nil {
		return (*now)()
	}
	return hotlimit.Monotonic()
}

func newBreaker(failures int, cooldown time.Duration) breaker {
	return breaker{threshold: int64(failures), cooldown: int64(cooldown)}
}

// allow reports whether a call may go to Redis: always while closed; while
// open, only one caller once the cooldown has passed (the probe), which
// moves the reopening another cooldown ahead for everyone else. probe is
// true for that caller, whose call must go by itself: in a pipeline shared
// with other calls, a node that does not answer would hold them all until
// the timeout.
func (b *breaker) allow() (ok, probe bool) {
	u := b.openUntil.Load()
	if u == 0 {
		return true, false
	}
	now := breakerNow()
	if now < u {
		return false, false
	}
	// Of the callers that saw the same expired u, exactly one swaps it:
	// that one probes, the others see the new deadline and stay out.
	ok = b.openUntil.CompareAndSwap(u, after(now, b.cooldown))
	return ok, ok
}

// open reports whether the breaker is open: cooling down, or its cooldown
// over and a call to come its probe.
func (b *breaker) open() bool { return b.openUntil.Load() != 0 }

// cooling reports whether the breaker is open and its cooldown runs at
// now, a reading of breakerNow: it turns every call away.
func (b *breaker) cooling(now int64) bool {
	u := b.openUntil.Load()
	return u != 0 && now < u
}

// success closes the breaker.
func (b *breaker) success() {
	if b.threshold == 0 {
		return
	}
	if b.fails.Load() != 0 { // most calls succeed: no write, no contended cache line
		b.fails.Store(0)
	}
	if b.openUntil.Load() != 0 {
		b.openUntil.Store(0)
	}
}

// failure counts an error, and opens the breaker at the threshold. A success
// and a failure racing may leave it closed or open; either is only a
// heuristic's choice, and the next calls settle it.
func (b *breaker) failure() {
	if b.threshold == 0 {
		return
	}
	if b.fails.Add(1) >= b.threshold {
		b.openUntil.Store(after(breakerNow(), b.cooldown))
	}
}

// after returns t + d for d >= 0, saturated at the largest int64: a
// deadline too far to hold stays in the future instead of wrapping into
// the past.
func after(t, d int64) int64 {
	if t > math.MaxInt64-d {
		return math.MaxInt64
	}
	return t + d
}
