package tokenbucket_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/tokenbucket"
)

func makeKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// newBenchLimiter reads the real (monotonic) clock. MaxLimit per MinWindow
// refills a token every nanosecond, more than any number of cores can ask
// for, so every call is admitted and takes the full path, CAS included; a
// denial only loads.
func newBenchLimiter(b *testing.B, keys []string) *tokenbucket.Limiter {
	lim, err := tokenbucket.New(tokenbucket.MaxLimit, tokenbucket.MinWindow)
	require.NoError(b, err)
	for _, k := range keys {
		require.True(b, lim.Allow(k))
	}
	require.Equal(b, len(keys), lim.Len())
	return lim
}

func BenchmarkAllow(b *testing.B) {
	b.Run("mode=serial/keys=1", func(b *testing.B) {
		keys := makeKeys(1)
		require.Len(b, keys, 1)
		lim := newBenchLimiter(b, keys)
		b.ReportAllocs()
		for b.Loop() {
			lim.Allow(keys[0])
		}
	})
	for _, n := range []int{1, 100000} {
		b.Run(fmt.Sprintf("mode=parallel/keys=%d", n), func(b *testing.B) {
			keys := makeKeys(n)
			require.Len(b, keys, n)
			lim := newBenchLimiter(b, keys)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := rand.IntN(n); pb.Next(); i++ {
					lim.Allow(keys[i%n])
				}
			})
		})
	}
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

func BenchmarkTake(b *testing.B) {
	b.Run("mode=serial/keys=1", func(b *testing.B) {
		keys := makeKeys(1)
		require.Len(b, keys, 1)
		lim := newBenchLimiter(b, keys)
		b.ReportAllocs()
		for b.Loop() {
			lim.Take(keys[0], 1)
		}
	})
}
