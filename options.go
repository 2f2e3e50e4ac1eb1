package hotlimit

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit/internal/nilness"
)

// Clock reads the time in nanoseconds from any fixed origin. A production
// clock never decreases; a limiter given a clock that does treats the step back
// as no time passing.
type Clock func() int64

// processStart anchors the default clock; time.Since reads the monotonic clock,
// so wall-clock steps (NTP, a changed date) never move it.
var processStart = time.Now()

// bubbleShift is how far processStart's wall time lies after midnight UTC,
// 2000-01-01, the time at which the fake clock of every testing/synctest
// bubble starts.
var bubbleShift = processStart.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))

// Monotonic is the default [Clock]: nanoseconds of the process's monotonic
// clock since the package was initialised.
//
// In a testing/synctest bubble it is the nanoseconds of the bubble's fake
// clock since the bubble started: every bubble starts at 0, and a limiter
// created in one decides alike at every run, its windows aligned on the
// bubble's start. (That holds while the fake clock reads a time before the
// wall-clock time the process started at, decades after the bubble's start,
// on a machine whose clock was set.) A limiter created outside a bubble, such
// as a package-level one, and used in it sees the clock step back, from the
// time the process has run to the bubble's 0, at the bubble's edge, and
// treats the step back as no time passing: create limiters in the bubble.
func Monotonic() int64 {
	d := time.Since(processStart)
	if d < 0 {
		// Only in a synctest bubble: time.Now there reads the fake clock,
		// which starts at 2000-01-01, without a monotonic reading, so
		// time.Since subtracts processStart's wall time. Outside one, it
		// subtracts monotonic readings, and the later is never less.
		d += bubbleShift
	}
	return int64(d)
}

// Options holds what every limiter constructor accepts. Build it with
// [NewOptions]; set it through [Option] values.
type Options struct {
	// Clock is the time source; never nil after NewOptions.
	Clock Clock
	// AutoSweep, when positive, makes a limiter sweep itself, a few keys at
	// a time, on the goroutines of insertions that find it at AutoSweep keys
	// or more; see [WithAutoSweep].
	AutoSweep int
	// MaxKeys, when positive, caps the keys an in-memory limiter holds; see
	// [WithMaxKeys].
	MaxKeys int
	// Burst, when positive, is how many requests a key may pass at once, for
	// the algorithms that separate the burst from the rate; see [WithBurst].
	Burst int
	// Factory, when not nil, builds the limiters of a service.Service in
	// place of the in-memory ones; see [WithFactory].
	Factory Factory
	// Observer, when not nil, hears of every decision; see [WithObserver].
	Observer Observer
	// NearLimit is the share of a limit's capacity at or below which an allowed
	// request's Remaining counts as near the limit; see [WithNearLimit].
	NearLimit float64
	// Extensions holds the options of packages that build on hotlimit, such
	// as redislimit: each such package reads the values of its own types and
	// ignores the rest. See [WithExtension].
	Extensions []any
}

// Factory builds the limiter that c names, as service.NewLimiter does for the
// in-memory algorithms. It returns an error wrapping [ErrInvalidConfig] when c
// is invalid or outside the range of what it builds. Each call returns a
// limiter of its own, never one it returned before or shares with anything
// else: the service owns it, and closes it (when it is an io.Closer) at its
// Close, when a Replace leaves no rule using it, or at once when the rules
// it was built for fail to build.
type Factory func(c Config, opts ...Option) (Limiter, error)

// WithFactory makes a service.Service build every limiter with f instead of
// its in-memory ones: redislimit.Factory, for one, keeps every rule's state in
// Redis. [Unlimited] is the exception: it keeps no state, and the service
// builds it itself, so f is never asked for it. A nil f keeps the default.
// Limiter constructors ignore it.
func WithFactory(f Factory) Option {
	return func(o *Options) {
		if f != nil {
			o.Factory = f
		}
	}
}

// WithExtension adds v to [Options.Extensions], for the package that
// defines v's type; every other constructor ignores it.
func WithExtension(v any) Option {
	return func(o *Options) { o.Extensions = append(o.Extensions, v) }
}

// Option configures a limiter; every constructor accepts any number of them.
type Option func(*Options)

// WithClock makes the limiter read time from c. A nil c keeps the default,
// [Monotonic]. Tests pass a fake clock to make every decision deterministic.
func WithClock(c Clock) Option {
	return func(o *Options) {
		if c != nil {
			o.Clock = c
		}
	}
}

// WithAutoSweep makes a limiter evict idle keys by itself, without a
// goroutine and without a pause: while it holds at least minKeys keys, the
// insertions of new keys take turns, about one in ten, to visit 32 held keys
// where the previous visit stopped, going round all keys, and evict those a
// Sweep would. No call waits for another, and none visits more. As a round
// of k keys takes about k/3 insertions, the keys held stay below about 1.6
// times the keys that are not idle, plus minKeys. Where a Refund that
// returns a key to a fresh key's state deletes it (the token bucket, the
// fixed window and the sliding counter), its memory waits for a visit: such
// refunds take turns too, whatever the keys held, so that the memory waiting
// stays below about twice what the keys held take (without an auto-sweep or
// a key cap they still do, and then evict nothing: they only free that
// memory, and the keys held stay until a Sweep). minKeys <= 0 turns it
// off, the default of the limiters' constructors; the limiters a
// service.Service builds default to service.DefaultAutoSweep instead.
func WithAutoSweep(minKeys int) Option {
	return func(o *Options) { o.AutoSweep = max(minKeys, 0) }
}

// WithMaxKeys caps the keys an in-memory limiter holds at n, so that a flood
// of distinct keys cannot take more memory than n keys do. When n keys are
// held and a new key arrives, the limiter first evicts idle keys (those a
// Sweep would evict), visiting at most 64 held keys where the previous visit
// stopped, until there is room for the new key. If that makes no room, it
// denies the new key's request, and keeps every held key: a key's state is
// never dropped while it matters, so no key ever passes more than its limit
// allows. The denial reads Allowed false, Remaining 0, and RetryAfter the
// time after which every key held now is idle if it gets no more requests
// (the algorithm's longest recovery: the refill of a drained bucket for a
// token bucket and GCRA, the end of the current window for a
// fixed window, of the next for a sliding counter, a window for a sliding
// log), counted from the clock reading: a clock behind the epoch of a token
// bucket or GCRA, or behind the earliest time a sliding log counts, adds
// the time it takes to get there. It is Never when that time lies past the
// clock's last reading, math.MaxInt64, or past the end of the limiter's
// time, where the keys held never go idle. It is a hint rather than a
// promise, as other new keys may take the room first. Its ResetAfter is the
// same time: the new key's quota is whole once there is room for it, and a
// client that reads the reset (the RateLimit field's t) waits as long as
// one that reads Retry-After.
// Take(key, 0) of a key not held reports a fresh key. The cap can be
// exceeded only by requests that were deciding on a key at the moment it was
// evicted, each by one key, until the next new key's evictions make room
// again. Where a Refund that returns a key to a fresh key's state deletes it
// (the token bucket, the fixed window and the sliding counter), it frees the
// key's room at once and its memory once a visit comes by: such refunds take
// turns to make those visits, as WithAutoSweep's insertions do, so that the
// memory waiting stays below about twice what the keys held take. The
// limiter's map is sized for n keys up front, or for 1<<20 keys (32 MB) when
// n is larger, and then grows as keys come. n <= 0 means no cap, the
// default.
func WithMaxKeys(n int) Option {
	return func(o *Options) { o.MaxKeys = max(n, 0) }
}

// WithBurst sets the burst of the algorithms that separate it from the rate:
// a key may pass up to burst requests at once, and is refilled at the rate
// of limit per window. 0 means the limit, the default. Every constructor
// rejects a negative burst, and those that do not support a burst reject any
// value other than 0 and the limit.
func WithBurst(burst int) Option {
	return func(o *Options) { o.Burst = burst }
}

// NewOptions applies opts over the defaults. An Observer that holds a nil
// function, such as a nil [ObserverFunc], or a nil pointer, map, slice or
// channel, such as a nil *hotlimitprom.Metrics, comes out as nil: it is no
// observer, and calling its method would most likely dereference it and
// panic at every decision.
func NewOptions(opts ...Option) Options {
	o := Options{Clock: Monotonic, NearLimit: DefaultNearLimit}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.Observer != nil && nilness.HoldsNil(o.Observer) {
		o.Observer = nil
	}
	return o
}

// RejectBurst returns an error wrapping [ErrInvalidConfig] when o sets a burst
// other than limit. The constructors of algorithms without a burst call it,
// so that a burst is never silently ignored.
func (o Options) RejectBurst(pkg string, limit int) error {
	if o.Burst != 0 && o.Burst != limit {
		return fmt.Errorf("%s: burst %d: the algorithm has no burst other than its limit %d: %w", pkg, o.Burst, limit, ErrInvalidConfig)
	}
	return nil
}
