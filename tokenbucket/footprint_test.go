package tokenbucket_test

import (
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestEmptyLimiterFootprint measures the heap a limiter holds before its
// first key, which the README and package service's doc give (about 6 KB,
// 4 KB of it its map's two pointers per shard): the median of five readings of the
// live heap, after a GC, around 1000 limiters built and kept, so that
// another goroutine's allocations or frees during one reading do not move
// it. Run it with -v to read the figure.
func TestEmptyLimiterFootprint(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figure is that of 64-bit platforms")
	}
	const n = 1000
	var readings []uint64
	for range 5 {
		keep := make([]*tokenbucket.Limiter, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			l, err := tokenbucket.New(10, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			keep[i] = l
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		readings = append(readings, (after.HeapAlloc-before.HeapAlloc)/n)
		runtime.KeepAlive(keep)
	}
	slices.Sort(readings)
	median := readings[len(readings)/2]
	t.Logf("an empty tokenbucket limiter holds %d bytes", median)
	assert.GreaterOrEqual(t, median, uint64(4<<10), "the map's 512 pointers to its shards' arrays and writers' states alone take 4 KB")
	// About 6 KB in all; 256 shards' writers' states would add 8 KB more.
	assert.Less(t, median, uint64(8<<10), "no shard allocated before its first key")
}
