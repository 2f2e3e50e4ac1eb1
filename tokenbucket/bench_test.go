package tokenbucket_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// newBenchLimiter reads the real (monotonic) clock. MaxLimit per MinWindow
// refills a token every nanosecond, more than any number of cores can ask
// for, so every call is admitted and takes the full path, CAS included; a
// denial only loads.
func newBenchLimiter(b *testing.B) hotlimit.Limiter {
	lim, err := tokenbucket.New(tokenbucket.MaxLimit, tokenbucket.MinWindow)
	require.NoError(b, err)
	return lim
}

func BenchmarkAllow(b *testing.B) {
	limitertest.BenchmarkAllow(b, newBenchLimiter)
}

func BenchmarkTake(b *testing.B) {
	limitertest.BenchmarkTake(b, newBenchLimiter, 1)
}

// BenchmarkAllowDenied: 1 per day, spent; every call is a denial, which
// loads and writes nothing.
func BenchmarkAllowDenied(b *testing.B) {
	lim, err := tokenbucket.New(1, tokenbucket.MaxWindow)
	require.NoError(b, err)
	require.True(b, lim.Allow("k"))
	b.Run("mode=parallel/keys=1", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				lim.Allow("k")
			}
		})
	})
}

// BenchmarkAllowOwnCost is serial Allow on one key with a clock that costs
// one atomic add and moves 1 ns per call (MaxLimit per MinWindow refills a
// token per nanosecond, so every call is admitted): the limiter's own cost,
// without the process's clock, which dominates BenchmarkAllow on machines
// with a slow clock source.
func BenchmarkAllowOwnCost(b *testing.B) {
	var now atomic.Int64
	lim, err := tokenbucket.New(tokenbucket.MaxLimit, tokenbucket.MinWindow, hotlimit.WithClock(func() int64 { return now.Add(1) }))
	require.NoError(b, err)
	require.True(b, lim.Allow("k"))
	b.Run("mode=serial/keys=1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !lim.Allow("k") {
				b.Fatal("denied")
			}
		}
	})
}
