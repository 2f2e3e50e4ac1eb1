package gcra_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// newBenchLimiter reads the real (monotonic) clock. MaxLimit per 100 ms is
// more than one core can ask for, so every call is admitted and takes the
// full path, CAS included; a denial only loads.
func newBenchLimiter(b *testing.B) hotlimit.Limiter {
	lim, err := gcra.New(gcra.MaxLimit, 100*time.Millisecond)
	require.NoError(b, err)
	return lim
}

func BenchmarkAllow(b *testing.B) {
	limitertest.BenchmarkAllow(b, newBenchLimiter)
}

func BenchmarkTake(b *testing.B) {
	limitertest.BenchmarkTake(b, newBenchLimiter, 1)
}
