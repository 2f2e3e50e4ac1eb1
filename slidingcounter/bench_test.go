package slidingcounter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// newBenchLimiter reads the real (monotonic) clock. MaxLimit per MinWindow,
// one request every 7.6 ns, is more than one core can ask for, so every call
// is admitted and takes the full path, CAS included; a denial only loads.
// (MaxLimit per 100 ms, one per 763 ns, denied over nine calls in ten.)
func newBenchLimiter(b *testing.B) hotlimit.Limiter {
	lim, err := newBenchPolicy()
	require.NoError(b, err)
	return lim
}

// newBenchPolicy is the limiter BenchmarkAllow and BenchmarkTake time, with
// opts.
func newBenchPolicy(opts ...hotlimit.Option) (*slidingcounter.Limiter, error) {
	return slidingcounter.New(slidingcounter.MaxLimit, slidingcounter.MinWindow, opts...)
}

// TestBenchPolicyAdmitsEveryCall holds BenchmarkAllow and BenchmarkTake to
// their comment: calls on one key, one every limitertest.BenchCallStep
// (faster than a core asks), all pass, over several windows, so the
// benchmarks time admissions.
func TestBenchPolicyAdmitsEveryCall(t *testing.T) {
	limitertest.AdmitsBenchCalls(t, 2*slidingcounter.MaxLimit, func(clock func() int64) func() bool {
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

// BenchmarkOverLimit calls one key far above its rate (1000 per 1 ms,
// serially), so that most calls are denied, and most denials are decided by
// the previous window's weight rather than by the current window's count
// alone: the steady state of a key asking for more than it is allowed. The
// mutex port of the same algorithm is the baseline:
//
//	go test -run '^$' -bench OverLimit -count 5 ./slidingcounter/
func BenchmarkOverLimit(b *testing.B) {
	for _, impl := range []string{"lockfree", "mutex"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var lim limitertest.Allower = newMutexCounter(1000, time.Millisecond)
			if impl == "lockfree" {
				l, err := slidingcounter.New(1000, time.Millisecond)
				require.NoError(b, err)
				lim = l
			}
			allowed := 0
			for b.Loop() {
				if lim.Allow("k") {
					allowed++
				}
			}
			b.ReportMetric(float64(allowed)/float64(b.N), "allowed/op")
		})
	}
}
