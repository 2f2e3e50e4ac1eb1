package slidinglog_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/slidinglog"
)

func makeKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// newBenchLimiter reads the real (monotonic) clock. With limit 8 per 1 ms
// one core is denied most of the time (a denial loads and decides); limit
// 1<<16 per 1 ms admits every call, CAS included.
func newBenchLimiter(b *testing.B, limit int, keys []string) *slidinglog.Limiter {
	lim, err := slidinglog.New(limit, time.Millisecond)
	require.NoError(b, err)
	for _, k := range keys {
		lim.Allow(k)
	}
	require.Equal(b, len(keys), lim.Len())
	return lim
}

func BenchmarkAllow(b *testing.B) {
	for _, limit := range []int{8, slidinglog.MaxLimit} {
		b.Run(fmt.Sprintf("limit=%d/mode=serial/keys=1", limit), func(b *testing.B) {
			keys := makeKeys(1)
			lim := newBenchLimiter(b, limit, keys)
			b.ReportAllocs()
			for b.Loop() {
				lim.Allow(keys[0])
			}
		})
	}
	for _, n := range []int{1, 10000} {
		b.Run(fmt.Sprintf("limit=8/mode=parallel/keys=%d", n), func(b *testing.B) {
			keys := makeKeys(n)
			lim := newBenchLimiter(b, 8, keys)
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
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("n=%d/mode=serial/keys=1", n), func(b *testing.B) {
			keys := makeKeys(1)
			lim := newBenchLimiter(b, slidinglog.MaxLimit, keys)
			b.ReportAllocs()
			for b.Loop() {
				lim.Take(keys[0], n)
			}
		})
	}
}
