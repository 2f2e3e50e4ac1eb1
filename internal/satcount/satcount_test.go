package satcount_test

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/satcount"
)

// TestCountStopsAtMaxInt64: adds sum exactly below math.MaxInt64 and stop
// there, whichever path (one atomic add or the CAS loop) each takes.
func TestCountStopsAtMaxInt64(t *testing.T) {
	var c satcount.Count
	c.Add(3)
	c.Add(0)
	c.Add(-5)
	assert.EqualValues(t, 3, c.Load(), "n ≤ 0 adds nothing")
	c.Add(1 << 40) // the CAS loop
	assert.EqualValues(t, 3+1<<40, c.Load())
	c.Add(math.MaxInt)
	assert.EqualValues(t, int64(math.MaxInt64), c.Load(), "saturated by a huge add")
	c.Add(1) // wraps the word, read as saturated
	assert.EqualValues(t, int64(math.MaxInt64), c.Load())
	c.Add(math.MaxInt)
	assert.EqualValues(t, int64(math.MaxInt64), c.Load(), "a huge add on a wrapped word changes nothing")

	var d satcount.Count
	d.Add(math.MaxInt64 - 1)
	d.Add(1)
	assert.EqualValues(t, int64(math.MaxInt64), d.Load(), "small adds reach the maximum exactly")
	d.Add(1)
	assert.EqualValues(t, int64(math.MaxInt64), d.Load(), "and stay there")
}

// TestCountNeverGoesDownConcurrently: goroutines add small and huge
// amounts while a reader checks that no reading is below the one before,
// and the total ends saturated.
func TestCountNeverGoesDownConcurrently(t *testing.T) {
	var c satcount.Count
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				if (g+i)%500 == 0 {
					c.Add(math.MaxInt / 3)
				} else {
					c.Add(1 << 20)
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
