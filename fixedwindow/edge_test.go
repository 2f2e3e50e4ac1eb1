package fixedwindow_test

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestWaitsAreExactAtTheEdges: for random limits, windows (non-whole
// seconds included, up to MaxWindow) and clocks near 0, today, 2100 and the
// ends of int64, with steps back: a denial's finite RetryAfter r never ends
// past math.MaxInt64, the same Take r − 1 ns later is denied and r later
// passes; and a finite ResetAfter is exactly when the key reports full.
func TestWaitsAreExactAtTheEdges(t *testing.T) {
	year := int64(366 * 24 * time.Hour)
	origins := []int64{0, 1796342400 * 1e9, 4102444800 * 1e9, math.MaxInt64 - year, math.MinInt64 + year, math.MaxInt64 - 1, math.MaxInt64 - 2*year}
	rng := rand.New(rand.NewPCG(1, 2))
	bad := 0
	checked := 0
	for it := 0; it < 20000 && bad < 20; it++ {
		limit := 1 + rng.IntN(10)
		if rng.IntN(5) == 0 {
			limit = 1 + rng.IntN(fixedwindow.MaxLimit)
		}
		window := time.Duration(int64(fixedwindow.MinWindow) + rng.Int64N(int64(fixedwindow.MaxWindow-fixedwindow.MinWindow)+1))
		if rng.IntN(2) == 0 {
			window = time.Duration(int64(fixedwindow.MinWindow) + rng.Int64N(int64(10*time.Second)))
		}
		o := origins[rng.IntN(len(origins))]
		off := rng.Int64N(2 * int64(window))
		if o > 0 {
			o -= off
		} else {
			o += off
		}
		var now atomic.Int64
		now.Store(o)
		lim, _ := fixedwindow.New(limit, window, hotlimit.WithClock(now.Load))
		for step := 0; step < 10 && bad < 20; step++ {
			if rng.IntN(4) == 0 {
				back := rng.Int64N(int64(window))
				if now.Load()-back < now.Load() {
					now.Add(-back)
				}
			}
			n := 1 + rng.IntN(limit)
			t0 := now.Load()
			d := lim.Take("k", n)
			if p := limitertest.ResetIsExact(lim, &now, "k", limit, t0, d); p != "" {
				bad++
				t.Errorf("limit %d window %v: %s", limit, window, p)
			}
			now.Store(t0)
			if !d.Allowed && d.RetryAfter != hotlimit.Never {
				checked++
			}
			if p := limitertest.RetryIsExact(lim, &now, "k", n, t0, d); p != "" {
				bad++
				t.Errorf("limit %d window %v: %s", limit, window, p)
				break
			}
		}
	}
	assert.Greater(t, checked, 500, "denials were checked")
}
