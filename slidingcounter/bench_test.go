package slidingcounter_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/slidingcounter"
)

func makeKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// newBenchLimiter reads the real (monotonic) clock. MaxLimit per 100 ms is
// more than one core can ask for, so every call is admitted and takes the
// full path, CAS included; a denial only loads.
func newBenchLimiter(b *testing.B, keys []string) *slidingcounter.Limiter {
	lim, err := slidingcounter.New(slidingcounter.MaxLimit, 100*time.Millisecond)
	require.NoError(b, err)
	for _, k := range keys {
		lim.Allow(k)
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
