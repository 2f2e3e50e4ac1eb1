package slidinglog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// benchLimiter returns a constructor of limiters reading the real
// (monotonic) clock. With limit 8 per 1 ms one core is denied most of the
// time (a denial loads and decides); with MaxLimit per 1 ms every call is
// admitted, CAS included, but a key then costs 512 KiB: only one key.
func benchLimiter(limit int) func(b *testing.B) hotlimit.Limiter {
	return func(b *testing.B) hotlimit.Limiter {
		lim, err := slidinglog.New(limit, time.Millisecond)
		require.NoError(b, err)
		return lim
	}
}

func BenchmarkAllow(b *testing.B) {
	b.Run("limit=8", func(b *testing.B) {
		limitertest.BenchmarkAllow(b, benchLimiter(8))
	})
}

func BenchmarkTake(b *testing.B) {
	for _, n := range []int{1, 4} {
		limitertest.BenchmarkTake(b, benchLimiter(slidinglog.MaxLimit), n)
	}
}
