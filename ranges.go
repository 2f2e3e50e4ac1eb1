package hotlimit

import (
	"fmt"
	"math/bits"
	"time"
)

// Range is the span of [Config] values an algorithm accepts: the widths of its
// packed state words bound them. [Config.Validate] checks a Config against
// its algorithm's Range, and the algorithm's constructor accepts exactly what
// Validate accepts (but for the one leniency Validate names: WithBurst of the
// limit for an algorithm without a burst).
type Range struct {
	// MaxLimit is the largest Limit; the least is 1.
	MaxLimit int
	// MinWindow and MaxWindow bound Window.
	MinWindow, MaxWindow time.Duration
	// MaxBurst is the largest Burst, or 0 when the algorithm has no burst
	// other than its limit.
	MaxBurst int
	// MaxBurstSpan, when not 0, bounds Burst·Window/Limit: the time a
	// drained key takes to refill its burst.
	MaxBurstSpan time.Duration
}

const (
	day = 24 * time.Hour
	// burstSpan bounds the refill time of a burst in the algorithms that
	// have one: their timestamps must span several refills.
	burstSpan = 366 * day
)

var ranges = map[Algorithm]Range{
	TokenBucket:    {MaxLimit: 1 << 20, MinWindow: time.Millisecond, MaxWindow: day, MaxBurst: 1 << 20, MaxBurstSpan: burstSpan},
	GCRA:           {MaxLimit: 1 << 20, MinWindow: time.Millisecond, MaxWindow: day, MaxBurst: 1 << 20, MaxBurstSpan: burstSpan},
	FixedWindow:    {MaxLimit: 1<<22 - 2, MinWindow: time.Millisecond, MaxWindow: 366 * day},
	SlidingCounter: {MaxLimit: 1<<17 - 2, MinWindow: time.Millisecond, MaxWindow: 366 * day},
	SlidingLog:     {MaxLimit: 1 << 16, MinWindow: time.Millisecond, MaxWindow: 366 * day},
}

// Range returns the values a accepts; the zero Range for Unlimited, which
// takes no Limit, Window or Burst, and for a value that names no algorithm.
//
//	algorithm       Limit        Window        Burst        Burst·Window/Limit
//	TokenBucket     1 … 2^20     1ms … 24h     1 … 2^20     ≤ 366 days
//	GCRA            1 … 2^20     1ms … 24h     1 … 2^20     ≤ 366 days
//	FixedWindow     1 … 2^22−2   1ms … 366d    = Limit
//	SlidingCounter  1 … 2^17−2   1ms … 366d    = Limit
//	SlidingLog      1 … 2^16     1ms … 366d    = Limit
func (a Algorithm) Range() Range {
	return ranges[a]
}

// check returns an error naming the first field of c outside r.
func (r Range) check(c Config) error {
	switch {
	case c.Limit > r.MaxLimit:
		return fmt.Errorf("hotlimit: Config.Limit %d out of range [1, %d] for %v: %w", c.Limit, r.MaxLimit, c.Algorithm, ErrInvalidConfig)
	case c.Window < r.MinWindow || c.Window > r.MaxWindow:
		return fmt.Errorf("hotlimit: Config.Window %v out of range [%v, %v] for %v: %w", c.Window, r.MinWindow, r.MaxWindow, c.Algorithm, ErrInvalidConfig)
	case c.Burst > r.MaxBurst:
		return fmt.Errorf("hotlimit: Config.Burst %d out of range [1, %d] for %v: %w", c.Burst, r.MaxBurst, c.Algorithm, ErrInvalidConfig)
	}
	if r.MaxBurstSpan > 0 {
		burst := c.Burst
		if burst == 0 {
			burst = c.Limit
		}
		// burst·window ≤ limit·MaxBurstSpan, in 128 bits.
		bh, bl := bits.Mul64(uint64(burst), uint64(c.Window))
		mh, ml := bits.Mul64(uint64(c.Limit), uint64(r.MaxBurstSpan))
		if bh > mh || bh == mh && bl > ml {
			return fmt.Errorf("hotlimit: Config.Burst %d of %d per %v takes longer than %v to refill: %w",
				burst, c.Limit, c.Window, r.MaxBurstSpan, ErrInvalidConfig)
		}
	}
	return nil
}
