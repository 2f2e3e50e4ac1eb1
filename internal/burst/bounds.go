package burst

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/hotlimit/hotlimit"
)

// Bounds are the ranges a limit with a burst (a token bucket's, a GCRA's)
// is accepted in: each package exports them as its own constants.
type Bounds struct {
	MaxLimit  int           // the largest limit
	MaxBurst  int           // the largest burst
	MinWindow time.Duration // the shortest window
	MaxWindow time.Duration // the longest window
	MaxSpan   time.Duration // the most Burst·Window/Limit, the time a drained key takes to refill
}

// Check returns the burst of a limit of limit per window whose burst option
// is burst (0: the limit), or an error, prefixed with pkg, that names the
// field out of b's range and the range, and wraps hotlimit.ErrInvalidConfig.
func (b Bounds) Check(pkg string, limit int, window time.Duration, burst int) (int, error) {
	if limit < 1 || limit > b.MaxLimit {
		return 0, fmt.Errorf("%s: limit %d out of range [1, %d]: %w", pkg, limit, b.MaxLimit, hotlimit.ErrInvalidConfig)
	}
	if window < b.MinWindow || window > b.MaxWindow {
		return 0, fmt.Errorf("%s: window %v out of range [%v, %v]: %w", pkg, window, b.MinWindow, b.MaxWindow, hotlimit.ErrInvalidConfig)
	}
	if burst == 0 {
		burst = limit
	}
	if burst < 1 || burst > b.MaxBurst {
		return 0, fmt.Errorf("%s: burst %d out of range [1, %d], or 0 for the limit: %w", pkg, burst, b.MaxBurst, hotlimit.ErrInvalidConfig)
	}
	// burst·window ≤ limit·MaxSpan, in 128 bits.
	bh, bl := bits.Mul64(uint64(burst), uint64(window))
	mh, ml := bits.Mul64(uint64(limit), uint64(b.MaxSpan))
	if bh > mh || bh == mh && bl > ml {
		return 0, fmt.Errorf("%s: burst %d of limit %d per %v takes longer than %v to refill; burst must lie in [1, %d]: %w",
			pkg, burst, limit, window, b.MaxSpan, b.MaxBurstFor(uint64(limit), uint64(window)), hotlimit.ErrInvalidConfig)
	}
	return burst, nil
}

// MaxBurstFor returns the largest burst whose refill takes at most MaxSpan,
// capped at MaxBurst: ⌊limit·MaxSpan/window⌋, for window > 0.
func (b Bounds) MaxBurstFor(limit, window uint64) uint64 {
	hi, lo := bits.Mul64(limit, uint64(b.MaxSpan))
	if hi >= window {
		return uint64(b.MaxBurst)
	}
	q, _ := bits.Div64(hi, lo, window)
	return min(q, uint64(b.MaxBurst))
}
