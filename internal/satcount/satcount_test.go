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

// TestCountZeroValueIsZero: a Count no one added to reads 0, not the
// saturated maximum, and so does one that got only adds of n ≤ 0.
func TestCountZeroValueIsZero(t *testing.T) {
	var c satcount.Count
	assert.EqualValues(t, 0, c.Load())
	c.Add(0)
	c.Add(-1)
	assert.EqualValues(t, 0, c.Load(), "n ≤ 0 adds nothing")
	c.Add(1)
	assert.EqualValues(t, 1, c.Load())
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

// TestCountHugeAddOnTheMaximumStaysThere: an add that overflows from
// math.MaxInt64 leaves the word at math.MaxInt64, not wrapped to a value
// just below zero, from which a small add would bring it back to 0.
func TestCountHugeAddOnTheMaximumStaysThere(t *testing.T) {
	skip32(t)
	var c satcount.Count
	add(&c, math.MaxInt64)
	add(&c, math.MaxInt64) // would wrap to −2
	assert.EqualValues(t, int64(math.MaxInt64), c.Load())
	add(&c, 2) // from −2, 0
	assert.EqualValues(t, int64(math.MaxInt64), c.Load(), "a reading went down")
}

// TestCountWrappedWordIgnoresAddsAbove2To32: once a one-add (n ≤ 2^32) has
// wrapped the word past math.MaxInt64, an add above 2^32 leaves it as it
// is, so that only adds of at most 2^32 each move it back towards zero:
// none of these, which sum to more than 2^63, brings it there.
func TestCountWrappedWordIgnoresAddsAbove2To32(t *testing.T) {
	skip32(t)
	var c satcount.Count
	add(&c, math.MaxInt64)
	add(&c, 1) // wraps the word to math.MinInt64
	for _, n := range []int64{math.MaxInt64, 1 << 40, 1<<32 + 1, 1 << 62, 1 << 62} {
		add(&c, n)
		assert.EqualValues(t, int64(math.MaxInt64), c.Load(), "after adding %d, a reading went down", n)
	}
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
