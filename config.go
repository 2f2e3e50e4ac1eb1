package hotlimit

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrInvalidConfig is wrapped by every error that rejects a policy: a bad
// [Config] field, or a limit or window outside the range an algorithm can
// represent. Test for it with errors.Is.
var ErrInvalidConfig = errors.New("invalid config")

// Algorithm names a rate-limiting algorithm. The zero value names none and is
// rejected by [Config.Validate].
type Algorithm uint8

// The algorithms, each implemented by the package of the same name.
const (
	// TokenBucket holds up to Limit tokens, refilled continuously at Limit per
	// Window; a request takes one. Bursts of up to Limit, smooth afterwards.
	TokenBucket Algorithm = 1
	// FixedWindow admits Limit requests per window aligned on the clock's origin.
	// Up to 2×Limit can pass across a window boundary.
	FixedWindow Algorithm = 2
	// SlidingLog admits a request when fewer than Limit passed in the Window
	// before it: exact, at the cost of Limit timestamps per key.
	SlidingLog Algorithm = 3
	// GCRA is the generic cell rate algorithm: the token bucket's model kept
	// as one theoretical arrival time per key.
	GCRA Algorithm = 4
	// SlidingCounter weighs the previous fixed window's count by its overlap
	// with the sliding window: O(1) memory, approximate.
	SlidingCounter Algorithm = 5
)

var algorithmNames = map[Algorithm]string{
	TokenBucket:    "TokenBucket",
	FixedWindow:    "FixedWindow",
	SlidingLog:     "SlidingLog",
	GCRA:           "GCRA",
	SlidingCounter: "SlidingCounter",
}

// String returns the algorithm's Go name, such as "TokenBucket", or
// "Algorithm(n)" for a value that names none.
func (a Algorithm) String() string {
	if s, ok := algorithmNames[a]; ok {
		return s
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// Valid reports whether a names an algorithm.
func (a Algorithm) Valid() bool {
	_, ok := algorithmNames[a]
	return ok
}

// Config is an immutable policy: at most Limit requests per Window, enforced by
// Algorithm. Config is comparable, so equal policies can share one limiter.
type Config struct {
	Algorithm Algorithm
	Limit     int
	Window    time.Duration
	// Burst, for TokenBucket and GCRA only, is how many requests a key may
	// pass at once; the rate stays Limit per Window. 0 means Limit.
	Burst int
}

// HasBurst reports whether a lets Config.Burst differ from the limit.
func (a Algorithm) HasBurst() bool {
	return a == TokenBucket || a == GCRA
}

// String formats c as "TokenBucket 5/1s", or "TokenBucket 100/1m0s burst 10"
// when it has a burst.
func (c Config) String() string {
	if c.Burst != 0 {
		return fmt.Sprintf("%v %d/%v burst %d", c.Algorithm, c.Limit, c.Window, c.Burst)
	}
	return fmt.Sprintf("%v %d/%v", c.Algorithm, c.Limit, c.Window)
}

// Validate reports the first field of c that no algorithm accepts, in an error
// that names the field and wraps [ErrInvalidConfig]. A valid Config may still
// be outside the range of its algorithm; the algorithm's constructor says so.
func (c Config) Validate() error {
	switch {
	case !c.Algorithm.Valid():
		return fmt.Errorf("hotlimit: Config.Algorithm %v is not an algorithm: %w", c.Algorithm, ErrInvalidConfig)
	case c.Limit < 1:
		return fmt.Errorf("hotlimit: Config.Limit %d must be at least 1: %w", c.Limit, ErrInvalidConfig)
	case c.Window <= 0:
		return fmt.Errorf("hotlimit: Config.Window %v must be positive: %w", c.Window, ErrInvalidConfig)
	case c.Burst < 0:
		return fmt.Errorf("hotlimit: Config.Burst %d must not be negative: %w", c.Burst, ErrInvalidConfig)
	case c.Burst > 0 && !c.Algorithm.HasBurst():
		return fmt.Errorf("hotlimit: Config.Burst %d: %v has no burst, only TokenBucket and GCRA do: %w", c.Burst, c.Algorithm, ErrInvalidConfig)
	}
	return nil
}
