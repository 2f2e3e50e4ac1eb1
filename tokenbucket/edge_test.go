package tokenbucket_test

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestWaitsAreExactAtTheEdges: for random limits, windows, bursts, and
// epochs near 0, today, 2100 and the ends of int64, with clocks behind the
// epoch and steps back: a denial's finite RetryAfter r never ends past
// math.MaxInt64, the same Take r − 1 ns later is denied and r later passes;
// and a finite ResetAfter is exactly when the key reports full.
func TestWaitsAreExactAtTheEdges(t *testing.T) {
	year := int64(366 * 24 * time.Hour)
	origins := []int64{0, 1796342400 * 1e9, 4102444800 * 1e9, math.MaxInt64 - year, math.MinInt64 + year, math.MaxInt64 - 1, math.MinInt64}
	rng := rand.New(rand.NewPCG(3, 4))
	bad := 0
	checked := 0
	for it := 0; it < 20000 && bad < 20; it++ {
		limit := 1 + rng.IntN(10)
		if rng.IntN(5) == 0 {
			limit = 1 + rng.IntN(tokenbucket.MaxLimit)
		}
		window := time.Duration(int64(tokenbucket.MinWindow) + rng.Int64N(int64(tokenbucket.MaxWindow-tokenbucket.MinWindow)+1))
		if rng.IntN(2) == 0 {
			window = time.Duration(int64(tokenbucket.MinWindow) + rng.Int64N(int64(10*time.Second)))
		}
		burst := limit
		if rng.IntN(2) == 0 {
			burst = 1 + rng.IntN(20)
		}
		o := origins[rng.IntN(len(origins))]
		var now atomic.Int64
		now.Store(o)
		lim, err := tokenbucket.New(limit, window, hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst))
		if err != nil {
			continue
		}
		fill := int64(float64(window) * float64(burst) / float64(limit))
		// Sometimes a clock behind the epoch.
		if rng.IntN(4) == 0 && o > math.MinInt64+fill {
			now.Add(-rng.Int64N(fill + 1))
		}
		for step := 0; step < 12 && bad < 20; step++ {
			switch rng.IntN(4) {
			case 0:
				if b := rng.Int64N(fill/2 + 1); now.Load()-b <= now.Load() {
					now.Add(-b)
				}
			case 1:
				if f := rng.Int64N(fill/2 + 1); now.Load()+f >= now.Load() {
					now.Add(f)
				}
			}
			n := 1 + rng.IntN(burst)
			t0 := now.Load()
			d := lim.Take("k", n)
			if !d.Allowed && d.RetryAfter != hotlimit.Never {
				checked++
			}
			if p := limitertest.RetryIsExact(lim, &now, "k", n, t0, d); p != "" {
				bad++
				t.Errorf("limit %d window %v burst %d origin %d: %s", limit, window, burst, o, p)
				break
			}
		}
		// ResetAfter, at the end: the key then changes no more.
		t0 := now.Load()
		if p := limitertest.ResetIsExact(lim, &now, "k", burst, t0, lim.Take("k", 0)); p != "" {
			bad++
			t.Errorf("limit %d window %v burst %d origin %d: %s", limit, window, burst, o, p)
		}
	}
	assert.Greater(t, checked, 500, "denials were checked")
}
