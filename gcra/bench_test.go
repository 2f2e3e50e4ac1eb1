package gcra_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// newBenchLimiter reads the real (monotonic) clock. MaxLimit per MinWindow
// refills a request about every nanosecond, more than any number of cores
// can ask for, so every call is admitted and takes the full path, CAS
// included; a denial only loads. (MaxLimit per 100 ms, one per 95 ns, denied
// about a third of serial calls once the burst was spent.)
func newBenchLimiter(b *testing.B) hotlimit.Limiter {
	lim, err := newBenchPolicy()
	require.NoError(b, err)
	return lim
}

// newBenchPolicy is the limiter the benchmarks time, with opts.
func newBenchPolicy(opts ...hotlimit.Option) (*gcra.Limiter, error) {
	return gcra.New(gcra.MaxLimit, gcra.MinWindow, opts...)
}

// TestBenchPolicyAdmitsEveryCall holds the benchmarks to their comment:
// calls on one key, one every limitertest.BenchCallStep (faster than a core
// asks), all pass, past the burst too, so the benchmarks time admissions.
func TestBenchPolicyAdmitsEveryCall(t *testing.T) {
	limitertest.AdmitsBenchCalls(t, 2*gcra.MaxLimit, func(clock func() int64) func() bool {
		lim, err := newBenchPolicy(hotlimit.WithClock(clock))
		require.NoError(t, err)
		return func() bool { return lim.Allow("k") }
	})
}

func BenchmarkAllow(b *testing.B) {
	limitertest.BenchmarkAllow(b, newBenchLimiter)
}

func BenchmarkTake(b *testing.B) {
	limitertest.BenchmarkTake(b, newBenchLimiter, 1)
}
