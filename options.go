package hotlimit

import (
	"fmt"
	"time"
)

// Clock reads the time in nanoseconds from any fixed origin. A production
// clock never decreases; a limiter given a clock that does treats the step back
// as no time passing.
type Clock func() int64

// processStart anchors the default clock; time.Since reads the monotonic clock,
// so wall-clock steps (NTP, a changed date) never move it.
var processStart = time.Now()

// Monotonic is the default [Clock]: nanoseconds of the process's monotonic
// clock since the package was initialised.
func Monotonic() int64 {
	return int64(time.Since(processStart))
}

// Options holds what every limiter constructor accepts. Build it with
// [NewOptions]; set it through [Option] values.
type Options struct {
	// Clock is the time source; never nil after NewOptions.
	Clock Clock
	// AutoSweep, when positive, makes a limiter sweep itself on the goroutine
	// of an insertion that brings it to AutoSweep keys or more; see
	// [WithAutoSweep].
	AutoSweep int
	// Burst, when positive, is how many requests a key may pass at once, for
	// the algorithms that separate the burst from the rate; see [WithBurst].
	Burst int
	// Factory, when not nil, builds the limiters of a service.Service in
	// place of the in-memory ones; see [WithFactory].
	Factory Factory
	// Observer, when not nil, hears of every decision; see [WithObserver].
	Observer Observer
	// NearLimit is the share of a limit at or below which an allowed
	// request's Remaining counts as near the limit; see [WithNearLimit].
	NearLimit float64
	// Extensions holds the options of packages that build on hotlimit, such
	// as redislimit: each such package reads the values of its own types and
	// ignores the rest. See [WithExtension].
	Extensions []any
}

// Factory builds the limiter that c names, as service.NewLimiter does for the
// in-memory algorithms. It returns an error wrapping [ErrInvalidConfig] when c
// is invalid or outside the range of what it builds.
type Factory func(c Config, opts ...Option) (Limiter, error)

// WithFactory makes a service.Service build every limiter with f instead of
// its in-memory ones: redislimit.Factory, for one, keeps every rule's state in
// Redis. A nil f keeps the default. Limiter constructors ignore it.
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

// WithAutoSweep makes a limiter evict idle keys by itself, without a goroutine:
// when an insertion brings it to at least minKeys keys, the inserting call
// sweeps (see the limiters' Sweep) and the next sweep waits until the key count
// has doubled from what survived, or reaches minKeys, whichever is more. The
// cost of sweeping is amortised over the insertions, like a hash table's
// growth: O(1) per insertion, paid in one call. minKeys <= 0 turns it off, the
// default.
func WithAutoSweep(minKeys int) Option {
	return func(o *Options) { o.AutoSweep = max(minKeys, 0) }
}

// WithBurst sets the burst of the algorithms that separate it from the rate:
// a key may pass up to burst requests at once, and is refilled at the rate
// of limit per window. 0 means the limit, the default. Every constructor
// rejects a negative burst, and those that do not support a burst reject any
// value other than 0 and the limit.
func WithBurst(burst int) Option {
	return func(o *Options) { o.Burst = burst }
}

// NewOptions applies opts over the defaults.
func NewOptions(opts ...Option) Options {
	o := Options{Clock: Monotonic, NearLimit: DefaultNearLimit}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
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
