package fixedwindow_test

import (
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestFrozenClockHammer: exactly limit per key and round, from 32
// goroutines, with and without a concurrent Sweep (see limitertest).
func TestFrozenClockHammer(t *testing.T) {
	limitertest.FrozenHammer(t, limitertest.Adapt(fixedwindow.New), time.Second,
		func(r int) time.Duration { return time.Duration(r)*time.Second + 500*time.Millisecond },
		func(limit int) int { return limit })
}

// TestPhasedHammer: in phases of a clock that moves forward, back and to
// window boundaries, concurrent passes equal the sequential model's (see
// limitertest).
func TestPhasedHammer(t *testing.T) {
	limitertest.PhasedHammer(t, limitertest.Adapt(fixedwindow.New), func(limit int, window time.Duration) limitertest.Model {
		return models.NewFixedWindow(limit, window).Take
	})
}

// TestMovingClockHammer: with the clock moving under 8 goroutines, no key
// passes more than limit per window (see limitertest).
func TestMovingClockHammer(t *testing.T) {
	limitertest.MovingClockHammer(t, limitertest.Adapt(fixedwindow.New))
}

// TestLinearizableRemaining: under a frozen clock, the allowed decisions'
// Remaining values are limit − 1, ..., 0, each exactly once, whatever the
// interleaving (see limitertest).
func TestLinearizableRemaining(t *testing.T) {
	limitertest.LinearizableRemaining(t, limitertest.Adapt(fixedwindow.New), time.Second,
		func(r int) time.Duration { return time.Duration(r)*time.Second + 500*time.Millisecond },
		func(limit int) int { return limit })
}

// TestExtremeClockDecisions: with clocks at and between both ends of int64, no
// Decision has a negative duration or a denial with RetryAfter 0 (see
// limitertest).
func TestExtremeClockDecisions(t *testing.T) {
	limitertest.ExtremeClocks(t, limitertest.Adapt(fixedwindow.New), fixedwindow.MinWindow, time.Second, fixedwindow.MaxWindow)
}
