package limitertest

import (
	"math"
	"runtime"
)

// LeastAllocated returns the fewest bytes one call of f allocated over
// three calls: the least, so that another goroutine's allocation during one
// call does not count against f.
func LeastAllocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}
