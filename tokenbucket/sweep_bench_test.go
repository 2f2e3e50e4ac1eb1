package tokenbucket_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// BenchmarkSweepBusy: Sweep over n keys none of which is full (each took one
// of its ten tokens under a frozen clock): every pass judges every key and
// evicts none.
func BenchmarkSweepBusy(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			now := int64(time.Second)
			lim, err := tokenbucket.New(10, time.Second, hotlimit.WithClock(func() int64 { return now }))
			require.NoError(b, err)
			for i := range n {
				lim.Allow("user-" + strconv.Itoa(i))
			}
			require.Equal(b, n, lim.Len())
			b.ReportAllocs()
			for b.Loop() {
				if lim.Sweep() != 0 {
					b.Fatal("evicted a busy key")
				}
			}
		})
	}
}

// BenchmarkSweepIdle: Sweep over n keys all full (idle for a window):
// every pass evicts them all. The keys are put back outside the timer.
func BenchmarkSweepIdle(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = "user-" + strconv.Itoa(i)
			}
			now := int64(time.Second)
			lim, err := tokenbucket.New(10, time.Second, hotlimit.WithClock(func() int64 { return now }))
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for _, k := range keys {
					lim.Allow(k)
				}
				now += int64(2 * time.Second)
				b.StartTimer()
				if got := lim.Sweep(); got != n {
					b.Fatalf("evicted %d of %d", got, n)
				}
			}
		})
	}
}
