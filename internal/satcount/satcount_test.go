package satcount_test

import (
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/satcount"
)

// add adds n to c through an int, converted at run time: the tests' 64-bit
// amounts are no constants a 32-bit build would reject.
func add(c *satcount.Count, n int64) { c.Add(int(n)) }

// skip32 skips a test on a platform whose int has 32 bits: adds there are
// below 2^31, and no test reaches math.MaxInt64 with them.
func skip32(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("adds of a 32-bit int do not reach math.MaxInt64 in a test")
	}
}

// TestCountStopsAtMaxInt64: adds sum exactly below math.MaxInt64 and stop
// there, whichever path (one atomic add or the CAS loop) each takes.
func TestCountStopsAtMaxInt64(t *testing.T) {
	skip32(t)
	var c satcount.Count
	add(&c, 3)
	add(&c, 0)
	add(&c, -5)
	assert.EqualValues(t, 3, c.Load(), "n ≤ 0 adds nothing")
	add(&c, 1<<40) // the CAS loop
	assert.EqualValues(t, 3+int64(1)<<40, c.Load())
	add(&c, math.MaxInt64)
	assert.EqualValues(t, int64(math.MaxInt64), c.Load(), "saturated by a huge add")
	add(&c, 1) // wraps the word, read as saturated
	assert.EqualValues(t, int64(math.MaxInt64), c.Load())
	add(&c, math.MaxInt64)
	assert.EqualValues(t, int64(math.MaxInt64), c.Load(), "a huge add on a wrapped word changes nothing")

	var d satcount.Count
	add(&d, math.MaxInt64-1)
	add(&d, 1)
	assert.EqualValues(t, int64(math.MaxInt64), d.Load(), "small adds reach the maximum exactly")
	add(&d, 1)
	assert.EqualValues(t, int64(math.MaxInt64), d.Load(), "and stay there")
}

// TestCountNeverGoesDownConcurrently: goroutines add small and huge
// amounts while a reader checks that no reading is below the one before,
// and the total ends saturated.
func TestCountNeverGoesDownConcurrently(t *testing.T) {
	skip32(t)
	var c satcount.Count
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				if (g+i)%500 == 0 {
					add(&c, math.MaxInt64/3)
				} else {
					add(&c, 1<<20)
				}
			}
		})
	}
	stop := make(chan struct{})
	read := make(chan bool)
	go func() {
		last, ok := int64(0), true
		for {
			select {
			case <-stop:
				read <- ok
				return
			default:
			}
			v := c.Load()
			ok = ok && v >= last
			last = v
		}
	}()
	wg.Wait()
	close(stop)
	assert.True(t, <-read, "a reading went down")
	assert.EqualValues(t, int64(math.MaxInt64), c.Load())
}
