// Package impl wraps every keyed rate limiter the benchmarks compare behind
// one small interface, under the name it has in every benchmark (impl=NAME).
//
// Every adapter enforces the same [Policy]: at most Limit requests per Window
// for each key, each key starting with its full quota. The algorithms differ
// (token bucket, GCRA, fixed window, sliding log), so past the first Limit
// requests of a key the answers can differ; within them, and under a policy
// that never runs out or one that is exhausted, they agree, which is what the
// allow and deny benchmarks rely on.
package impl

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
)

// Policy is Limit requests per Window, for each key.
type Policy struct {
	Limit  int
	Window time.Duration
}

// String returns the policy as "Limit/Window", such as "100/1ms".
func (p Policy) String() string { return fmt.Sprintf("%d/%v", p.Limit, p.Window) }

// Limiter is the call every benchmark times.
type Limiter interface {
	// Allow reports whether one request from key passes, and counts it.
	Allow(key string) bool
}

// Instance is one limiter of an implementation, with what the harness needs
// around it.
type Instance struct {
	Limiter
	// Sweep evicts idle keys on demand; nil when the implementation only
	// evicts on its own timer, or never.
	Sweep func()
	// Len returns the number of keys held; nil when the implementation does
	// not tell.
	Len func() int
	// Close releases the instance's background goroutines, if any.
	Close func()
}

// Eviction says how an implementation forgets idle keys.
type Eviction string

// The ways of evicting idle keys.
const (
	EvictSweep   Eviction = "Sweep"   // an explicit call (hotlimit, and the mutex port)
	EvictJanitor Eviction = "janitor" // an explicit call written here, as users of the library write it
	EvictTimer   Eviction = "timer"   // the library's own background goroutine, every Options.EvictEvery
	EvictNone    Eviction = "none"    // never
)

// Options are the harness's knobs for an instance.
type Options struct {
	// Clock is the time source of implementations that accept one (Impl.Clock);
	// nil means each one's own real clock. Others always read the real clock.
	Clock hotlimit.Clock
	// EvictEvery is the period of an EvictTimer implementation's background
	// eviction; 0 means its default. It then evicts keys idle for a Window.
	EvictEvery time.Duration
}

// Impl is one implementation under comparison.
type Impl struct {
	// Name is the impl= value in benchmark names.
	Name string
	// Hotlimit is true for this module's own limiters, whose exactness the
	// tests assert; peers are only reported on.
	Hotlimit bool
	// Clock is true when Options.Clock is honoured.
	Clock bool
	// Eviction says how idle keys go.
	Eviction Eviction
	// Notes says how the implementation is configured, in a few words.
	Notes string
	// New returns a limiter enforcing p.
	New func(p Policy, o Options) (*Instance, error)
}

// All returns every implementation, the baseline (mutex) first, then the
// peers, then hotlimit's.
func All() []Impl {
	return append([]Impl{Mutex(), XTime(), GoLimiter(), Throttled(), Ulule()}, hotlimitImpls()...)
}

// ByName returns the implementation called name.
func ByName(name string) (Impl, bool) {
	for _, im := range All() {
		if im.Name == name {
			return im, true
		}
	}
	return Impl{}, false
}

// nop is the Close of instances without goroutines.
func nop() {}
