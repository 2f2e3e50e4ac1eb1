package limitertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
)

// RetryIsExact checks d, the denial of lim.Take(key, n) read at clock
// reading t0 on clock, against the promise of an exact wait: a finite
// RetryAfter r ends at or before math.MaxInt64, the same Take r − 1 ns
// later is denied and r later passes. It leaves the clock at t0 + r and
// returns "" when the promise holds, else what broke it. A d allowed, or
// denied with Never, holds it trivially.
func RetryIsExact(lim hotlimit.Limiter, clock *atomic.Int64, key string, n int, t0 int64, d hotlimit.Decision) string {
	if d.Allowed || d.RetryAfter == hotlimit.Never {
		return ""
	}
	r := int64(d.RetryAfter)
	if t0 > math.MaxInt64-r {
		return fmt.Sprintf("at %d: Take(%d) %+v: finite RetryAfter ends past math.MaxInt64", t0, n, d)
	}
	clock.Store(t0 + r - 1)
	if e := lim.Take(key, n); e.Allowed {
		return fmt.Sprintf("at %d: Take(%d) %+v: allowed 1 ns before RetryAfter: %+v", t0, n, d, e)
	}
	clock.Store(t0 + r)
	if e := lim.Take(key, n); !e.Allowed {
		return fmt.Sprintf("at %d: Take(%d) %+v: denied at RetryAfter: %+v", t0, n, d, e)
	}
	return ""
}

// ResetIsExact checks d, a decision on key read at clock reading t0 on
// clock, against the promise of its ResetAfter ra: when finite, it ends at or
// before math.MaxInt64; ra − 1 ns later the key reports neither full
// requests remaining nor a ResetAfter of 0, and ra later it reports both. It leaves the
// clock at t0 + ra and returns "" when the promise holds, else what broke
// it.
func ResetIsExact(lim hotlimit.Limiter, clock *atomic.Int64, key string, full int, t0 int64, d hotlimit.Decision) string {
	if d.ResetAfter <= 0 || d.ResetAfter == hotlimit.Never {
		return ""
	}
	ra := int64(d.ResetAfter)
	if t0 > math.MaxInt64-ra {
		return fmt.Sprintf("at %d: %+v: finite ResetAfter ends past math.MaxInt64", t0, d)
	}
	clock.Store(t0 + ra - 1)
	if e := lim.Take(key, 0); e.Remaining == full || e.ResetAfter == 0 {
		return fmt.Sprintf("at %d: %+v: full 1 ns before ResetAfter: %+v", t0, d, e)
	}
	clock.Store(t0 + ra)
	if e := lim.Take(key, 0); e.Remaining != full || e.ResetAfter != 0 {
		return fmt.Sprintf("at %d: %+v: not full at ResetAfter: %+v", t0, d, e)
	}
	return ""
}

// NeverIsExact checks d, the decision of lim.Take(key, n) read at clock
// reading t0 on clock, with 1 ≤ n ≤ the limit, against the promise of a
// Never: a denial's RetryAfter Never means that the same Take is still
// denied at math.MaxInt64, the last reading a clock makes, and a ResetAfter
// Never that the key is still not full there (it reports fewer than full
// requests remaining, or a ResetAfter other than 0). Asking at
// math.MaxInt64 changes nothing when the promise holds; the clock is left
// there. It returns "" when the promise holds, else what broke it.
func NeverIsExact(lim hotlimit.Limiter, clock *atomic.Int64, key string, n, full int, t0 int64, d hotlimit.Decision) string {
	if d.ResetAfter == hotlimit.Never {
		clock.Store(math.MaxInt64)
		if e := lim.Take(key, 0); e.Remaining == full && e.ResetAfter == 0 {
			return fmt.Sprintf("at %d: Take(%d) %+v: ResetAfter Never, but full at math.MaxInt64: %+v", t0, n, d, e)
		}
	}
	if !d.Allowed && d.RetryAfter == hotlimit.Never {
		clock.Store(math.MaxInt64)
		if e := lim.Take(key, n); e.Allowed {
			return fmt.Sprintf("at %d: Take(%d) %+v: RetryAfter Never, but allowed at math.MaxInt64: %+v", t0, n, d, e)
		}
	}
	return ""
}

// edgeWindows are windows whose boundaries fall on the last readings a clock
// makes: the windows of 153092023 ns (49·73·127·337) start at math.MaxInt64,
// those of 4294967294 ns (2·(2^31 − 1)) at math.MaxInt64 − 1, and those of
// 2^30 ns at 2^63, one past the last reading. Waits of the windowed
// algorithms there end exactly at math.MaxInt64, or 1 ns past it.
var edgeWindows = []time.Duration{153092023, 4294967294, 1 << 30}

// WindowedWaitsAreExact checks, for a windowed algorithm (a fixed window, a
// sliding counter), random limits up to maxLimit and windows in [minWindow,
// maxWindow] (non-whole seconds included), on clocks near 0, today, 2100 and
// the ends of int64, with steps back, that every denial's finite RetryAfter
// and every finite ResetAfter is exact (RetryIsExact, ResetIsExact): in
// particular, that none ends past math.MaxInt64, the last reading a clock
// makes; and that every Never is (NeverIsExact): what it says never comes
// does not come by math.MaxInt64. Some runs take windows whose boundaries
// fall on math.MaxInt64 − 1, math.MaxInt64 and 2^63 (edgeWindows), on
// clocks in their last windows; and a key drained at each of the last
// three readings is asked again at it and each later one, in those
// windows, where a wait ends exactly at the last reading or would end 1 ns
// past it: both must occur. newLimiter builds a limiter of limit per window
// reading clock.
func WindowedWaitsAreExact(t *testing.T, seed uint64, maxLimit int, minWindow, maxWindow time.Duration,
	newLimiter func(limit int, window time.Duration, clock hotlimit.Clock) (hotlimit.Limiter, error)) {
	t.Helper()
	year := int64(366 * 24 * time.Hour)
	origins := []int64{0, 1796342400 * 1e9, 4102444800 * 1e9, math.MaxInt64 - year, math.MinInt64 + year, math.MaxInt64 - 1, math.MaxInt64 - 2*year}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var edges []time.Duration
	for _, w := range edgeWindows {
		if w >= minWindow && w <= maxWindow {
			edges = append(edges, w)
		}
	}
	bad := 0
	checked := 0
	for it := 0; it < 20000 && bad < 20; it++ {
		limit := 1 + rng.IntN(10)
		if rng.IntN(5) == 0 {
			limit = 1 + rng.IntN(maxLimit)
		}
		window := time.Duration(int64(minWindow) + rng.Int64N(int64(maxWindow-minWindow)+1))
		if rng.IntN(2) == 0 {
			window = time.Duration(int64(minWindow) + rng.Int64N(int64(10*time.Second)))
		}
		o := origins[rng.IntN(len(origins))]
		if len(edges) > 0 && rng.IntN(4) == 0 {
			window, o = edges[rng.IntN(len(edges))], math.MaxInt64
		}
		off := rng.Int64N(2 * int64(window))
		if o > 0 {
			o -= off
		} else {
			o += off
		}
		var now atomic.Int64
		now.Store(o)
		lim, err := newLimiter(limit, window, now.Load)
		if err != nil {
			t.Fatalf("limit %d window %v: %v", limit, window, err)
		}
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
			if p := ResetIsExact(lim, &now, "k", limit, t0, d); p != "" {
				bad++
				t.Errorf("limit %d window %v: %s", limit, window, p)
			}
			now.Store(t0)
			if p := NeverIsExact(lim, &now, "k", n, limit, t0, d); p != "" {
				bad++
				t.Errorf("limit %d window %v: %s", limit, window, p)
				break
			}
			now.Store(t0)
			if !d.Allowed && d.RetryAfter != hotlimit.Never {
				checked++
			}
			if p := RetryIsExact(lim, &now, "k", n, t0, d); p != "" {
				bad++
				t.Errorf("limit %d window %v: %s", limit, window, p)
				break
			}
		}
	}
	if checked <= 500 {
		t.Errorf("%d denials with a finite RetryAfter checked, want more than 500", checked)
	}
	// At the last readings: for each edge window, a key drained at one of
	// the last three readings and asked again at it or a later one. Each
	// algorithm meets there a wait that ends exactly at math.MaxInt64, and
	// one that would end 1 ns past it.
	atEnd, nevers := 0, 0
	for _, window := range edges {
		for _, limit := range []int{1, 2, 3} {
			for drained := int64(math.MaxInt64 - 2); ; drained++ {
				for t0 := drained; ; t0++ {
					for _, n := range []int{1, limit} {
						var now atomic.Int64
						now.Store(drained)
						lim, err := newLimiter(limit, window, now.Load)
						if err != nil {
							t.Fatalf("limit %d window %v: %v", limit, window, err)
						}
						if !lim.Take("k", limit).Allowed {
							t.Fatalf("limit %d window %v: a new key's Take(%d) at %d denied", limit, window, limit, drained)
						}
						now.Store(t0)
						d := lim.Take("k", n)
						switch {
						case d.Allowed:
						case d.RetryAfter == hotlimit.Never:
							nevers++
						case t0 == math.MaxInt64-int64(d.RetryAfter):
							atEnd++
						}
						for _, check := range []func() string{
							func() string { return ResetIsExact(lim, &now, "k", limit, t0, d) },
							func() string { return NeverIsExact(lim, &now, "k", n, limit, t0, d) },
							func() string { return RetryIsExact(lim, &now, "k", n, t0, d) },
						} {
							now.Store(t0)
							if p := check(); p != "" {
								t.Errorf("limit %d window %v, drained at %d: %s", limit, window, drained, p)
								break
							}
						}
					}
					if t0 == math.MaxInt64 {
						break
					}
				}
				if drained == math.MaxInt64 {
					break
				}
			}
		}
	}
	if len(edges) > 0 && (atEnd == 0 || nevers == 0) {
		t.Errorf("at the last readings, %d denials whose RetryAfter ends at math.MaxInt64 and %d with Never, want some of each", atEnd, nevers)
	}
}

// WaitLongerThanADurationIsNever checks a windowed algorithm's drained key
// (limit 1, window maxWindow) read from a clock stepped back about 300 years
// behind its window (300 windows of maxWindow): the wait, longer than a
// Duration holds though it ends before math.MaxInt64, is Never, for both
// RetryAfter and ResetAfter. newLimiter builds a limiter of limit per window
// reading clock.
func WaitLongerThanADurationIsNever(t *testing.T, maxWindow time.Duration,
	newLimiter func(limit int, window time.Duration, clock hotlimit.Clock) (hotlimit.Limiter, error)) {
	t.Helper()
	var now atomic.Int64
	w := int64(maxWindow)
	lim, err := newLimiter(1, maxWindow, now.Load)
	if err != nil {
		t.Fatal(err)
	}
	now.Store(150 * w)
	if !lim.Allow("k") {
		t.Fatal("a fresh key's first call is denied")
	}
	now.Store(-150 * w)
	if d, want := lim.Take("k", 1), (hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never, ResetAfter: hotlimit.Never}); d != want {
		t.Errorf("Take(1) 300 windows back: %+v, want %+v", d, want)
	}
	if d, want := lim.Take("k", 0), (hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: hotlimit.Never}); d != want {
		t.Errorf("Take(0) 300 windows back: %+v, want %+v", d, want)
	}
}
