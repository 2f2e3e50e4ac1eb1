package tokenbucket_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// BenchmarkAllowNewKeys measures Allow on a key never seen before, one
// request each, as a fake clock moves 1 µs per call: with 100 per 10 ms, a
// key is idle again 100 calls later. With sweep=auto (WithAutoSweep(1<<16))
// the cost includes the sweeping that keeps the map at the threshold.
func BenchmarkAllowNewKeys(b *testing.B) {
	const n = 1 << 20
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	for _, auto := range []int{0, 1 << 16} {
		name := "sweep=off"
		if auto > 0 {
			name = "sweep=auto"
		}
		b.Run(name, func(b *testing.B) {
			var now int64
			lim, err := tokenbucket.New(100, 10*time.Millisecond, hotlimit.WithClock(func() int64 { return now }), hotlimit.WithAutoSweep(auto))
			require.NoError(b, err)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				lim.Allow(keys[i%n]) // distinct until the keys wrap, then a new limiter
				now += int64(time.Microsecond)
				if i++; i%n == 0 {
					b.StopTimer()
					lim, _ = tokenbucket.New(100, 10*time.Millisecond, hotlimit.WithClock(func() int64 { return now }), hotlimit.WithAutoSweep(auto))
					b.StartTimer()
				}
			}
		})
	}
}
