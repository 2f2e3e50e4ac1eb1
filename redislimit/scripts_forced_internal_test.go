package redislimit

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestScriptsMatchBeforeForced runs every string-state script and its
// former version on stored values the random comparison does not draw (the
// parse's edge cases: trailing spaces, a fourth or fifth field, an empty or
// '-' born, a '+', leading zeros, '-0', digit strings beyond a double,
// non-ASCII) and on fields at each range check's boundaries and around
// ±2^53, under calls that take, report and give back at, before and after
// the clock, and checks that both reply and store the same.
func TestScriptsMatchBeforeForced(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	ctx, client, before := beforeScripts(t)
	type cfg struct{ limit, window, burst, perms int64 }
	cfgs := []cfg{{1, 1, 1, 1}, {5, 3, 5, 1000}, {7, 2, 3, 1}, {10, 1, 2, 1}, {3, 1000, 9, 1000000}, {2, exact>>3 - 1, 2, 1}}
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter} {
		old := before(a)
		for ci, c := range cfgs {
			// clocks at zero, mid-range and both ends of the clock's range
			now := []int64{1000, 0, clockRange, -clockRange, -1, 1 << 40}[ci]
			cp := c.burst * c.window
			nums := []int64{0, 1, -1, c.limit, c.limit - 1, c.limit + 1, -c.limit, cp, cp - 1, cp + 1, cp - c.limit, cp - c.limit + 1, cp - c.limit - 1,
				now, now - 1, now + 1, now - 2, now + c.window, now - c.window, now / c.window, now/c.window + 1, now/c.window - 1,
				exact - 1, exact, -exact, -exact + 1, 1<<53 - 1, 1 << 53, -(1<<53 - 1), -(1 << 53), clockRange, -clockRange,
				1<<31 - 1, 1 << 31, -(1 << 31), -(1 << 31) - 1} // each side of int's '%d' bound
			var fields []string
			for _, x := range nums {
				fields = append(fields, strconv.FormatInt(x, 10))
			}
			fields = append(fields, "-0", "+1", "007", "-007", "00", "99999999999999999999999999", "-99999999999999999999999999", "1e3", "٣", "é", "")
			var values []string
			for i, f := range fields {
				g := fields[(i*7+3)%len(fields)]
				values = append(values,
					f+" "+g, g+" "+f, f+" "+g+" ", f+" "+g+"  ", f+"  "+g, " "+f+" "+g,
					f+" "+g+" "+f, f+" "+g+" "+f+" "+g, f+" "+g+" "+f+" "+g+" "+f,
					f+" "+g+" -", f+" "+g+" "+f+" -", f+" "+g+"  "+f, f+" "+g+" - "+f,
					strconv.FormatInt(now, 10)+" "+f, f+" "+strconv.FormatInt(now, 10), "1 "+f+" "+g, f+" 1 "+g+" 1")
			}
			var calls [][]any
			for _, n := range []int64{0, 1, c.burst, c.burst + 1, -1} {
				for _, extra := range []int64{0, 1, c.burst} {
					calls = append(calls, []any{n, strconv.FormatInt(now, 10), c.limit, c.window, c.burst, c.perms, extra, 0, ""})
				}
				for _, at := range []string{"", strconv.FormatInt(now, 10), strconv.FormatInt(now-1, 10), strconv.FormatInt(now+1, 10), strconv.FormatInt(now-c.window, 10), "0"} {
					for _, gb := range []int64{1, c.burst} {
						calls = append(calls, []any{n, strconv.FormatInt(now, 10), c.limit, c.window, c.burst, c.perms, 0, gb, at})
					}
				}
			}
			for vi, v := range values {
				call := calls[(vi*13+ci)%len(calls)]
				for _, cl := range [][]any{call, calls[(vi*5+1)%len(calls)]} {
					oldKey, newKey := fmt.Sprintf("fo:%v", a), fmt.Sprintf("fn:%v", a)
					p := client.TxPipeline()
					p.Set(ctx, oldKey, v, time.Minute)
					p.Set(ctx, newKey, v, time.Minute)
					ro := old.Run(ctx, p, []string{oldKey}, cl...)
					rn := scripts[a].Run(ctx, p, []string{newKey}, cl...)
					so, sn := p.Get(ctx, oldKey), p.Get(ctx, newKey)
					to, tn := p.PTTL(ctx, oldKey), p.PTTL(ctx, newKey)
					// a second call on what the first stored
					ro2 := old.Run(ctx, p, []string{oldKey}, calls[(vi*3+2)%len(calls)]...)
					rn2 := scripts[a].Run(ctx, p, []string{newKey}, calls[(vi*3+2)%len(calls)]...)
					so2, sn2 := p.Get(ctx, oldKey), p.Get(ctx, newKey)
					start := time.Now()
					_, _ = p.Exec(ctx)
					slack := time.Since(start) + 2*time.Millisecond
					what := fmt.Sprintf("%v config %+v value %q args %v", a, c, v, cl)
					vo, eo := ro.Result()
					vn, en := rn.Result()
					require.Equal(t, scriptErr(eo), scriptErr(en), "error of %s", what)
					require.Equal(t, vo, vn, "reply of %s", what)
					require.Equal(t, so.Val(), sn.Val(), "stored value of %s", what)
					require.InDelta(t, to.Val(), tn.Val(), float64(slack), "TTL of %s", what)
					vo2, eo2 := ro2.Result()
					vn2, en2 := rn2.Result()
					require.Equal(t, scriptErr(eo2), scriptErr(en2), "second error of %s", what)
					require.Equal(t, vo2, vn2, "second reply of %s", what)
					require.Equal(t, so2.Val(), sn2.Val(), "second stored value of %s", what)
				}
			}
		}
	}
}
