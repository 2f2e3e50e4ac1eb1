package gcra_test

import (
	"sync/atomic"
	"testing"
	"time"

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
	var now atomic.Int64
	lim, err := newBenchPolicy(hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for i := range 2 * gcra.MaxLimit {
		now.Add(int64(limitertest.BenchCallStep))
		if !lim.Allow("k") {
			require.Failf(t, "a benchmark call is denied", "call %d, at %v", i, time.Duration(now.Load()))
		}
	}
}

func BenchmarkAllow(b *testing.B) {
	limitertest.BenchmarkAllow(b, newBenchLimiter)
}

func BenchmarkTake(b *testing.B) {
	limitertest.BenchmarkTake(b, newBenchLimiter, 1)
}
