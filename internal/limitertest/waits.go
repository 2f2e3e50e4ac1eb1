package limitertest

import (
	"fmt"
	"math"
	"sync/atomic"

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
