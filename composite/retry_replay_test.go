package composite_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
)

// childSpec is one child of a composite a test builds again and again:
// a limiter of kinds[kind], or, with sub set, a nested composite of those.
type childSpec struct {
	kind   int
	limit  int
	window time.Duration
	sub    []childSpec
}

// build returns the composite of specs on clock.
func build(t *testing.T, specs []childSpec, clock hotlimit.Clock) *composite.Limiter {
	t.Helper()
	children := make([]hotlimit.Limiter, len(specs))
	for i, s := range specs {
		if s.sub != nil {
			children[i] = build(t, s.sub, clock)
		} else {
			children[i] = kinds[s.kind].make(t, s.limit, s.window, clock)
		}
	}
	return nested(t, children...)
}

// TestRetryAfterPassesExactlyThen plays random histories of Takes of one or
// several requests, with the clock moving forward, on composites of the
// limiters whose waits are exact (all but the token bucket, whose fixed
// point makes them a few units early), sliding logs among them, directly or
// inside nested composites, in any order. At every denial whose RetryAfter
// is finite, the same history, replayed on a fresh composite under a frozen
// clock, is denied 1 ns before RetryAfter and passes at it.
func TestRetryAfterPassesExactlyThen(t *testing.T) {
	exact := []int{1, 2, 3, 4} // gcra, fixedwindow, slidingcounter, slidinglog
	windows := []time.Duration{time.Second, 3 * time.Second, 10 * time.Second}
	seeds := uint64(60)
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 7))
		leaf := func() childSpec {
			return childSpec{kind: exact[rng.IntN(len(exact))], limit: 1 + rng.IntN(4), window: windows[rng.IntN(len(windows))]}
		}
		var specs []childSpec
		for range 2 + rng.IntN(2) {
			if rng.IntN(3) == 0 {
				specs = append(specs, childSpec{sub: []childSpec{leaf(), leaf()}})
			} else {
				specs = append(specs, leaf())
			}
		}
		// At least one sliding log after the first child.
		specs = append(specs, childSpec{kind: 4, limit: 1 + rng.IntN(4), window: windows[rng.IntN(len(windows))]})
		if rng.IntN(2) == 0 {
			last := specs[len(specs)-1]
			specs[len(specs)-1] = childSpec{sub: []childSpec{leaf(), last}}
		}
		start := int64(1000 * time.Hour)
		var now int64 = start
		c := build(t, specs, func() int64 { return now })
		most := c.Burst()
		type op struct {
			at int64
			n  int
		}
		var ops []op
		checked := 0
		for step := range 80 {
			switch r := rng.IntN(10); {
			case r < 4:
			case r < 8:
				now += rng.Int64N(int64(time.Second))
			default:
				now += rng.Int64N(int64(10 * time.Second))
			}
			n := 1 + rng.IntN(most)
			d := c.Take("k", n)
			msg := fmt.Sprintf("seed %d step %d, %+v: Take(k, %d) = %+v", seed, step, specs, n, d)
			if !d.Allowed && d.RetryAfter != hotlimit.Never {
				require.Positive(t, d.RetryAfter, msg)
				for _, early := range []bool{true, false} {
					at := start // the epoch of the limiters that read one
					again := build(t, specs, func() int64 { return at })
					for _, o := range ops {
						at = o.at
						again.Take("k", o.n)
					}
					at = now + int64(d.RetryAfter)
					if early {
						at--
					}
					require.Equal(t, !early, again.Take("k", n).Allowed, "%s: at RetryAfter, early %v", msg, early)
				}
				checked++
			}
			ops = append(ops, op{now, n})
		}
		require.Positive(t, checked, "seed %d: no denial", seed)
	}
}
