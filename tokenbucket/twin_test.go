package tokenbucket

import (
	"fmt"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// twin runs a limiter on a fake clock beside the model and checks every
// decision against it.
//
// How the limiter may differ from the model. The limiter counts refills on a
// grid of units (2^−F token) fixed at its epoch: with the same history, its
// tokens are within one unit of the model's (checked after every call, from
// the state word). Its token count is an integer number of units and so is
// every threshold, so:
//
//   - model tokens ≥ n: the limiter admits too;
//   - model tokens ≤ n − 1 unit: the limiter denies too;
//   - in between, the model leaves the decision to the limiter (a "band"
//     call) and follows it, so the histories stay the same.
//
// Band calls happen only when clock readings fall between units. When every
// clock reading is a multiple of a grid g (nanoseconds), the model's tokens
// minus any threshold are multiples of 2^F·gcd(g·Limit, Window)/Window units,
// so with 2^F ≥ Window/gcd(g·Limit, Window) there is no band at all: the
// twin is then exact, and any band call fails the test. That covers every
// millisecond-stepped configuration of the tests (5/1s: 200 ≤ 2^18; 3/7ms: 7;
// 100/1m: 600; 1/24h: 8.64e7 ≤ 2^28; 1<<16/1ms: 1 ≤ 2^0); nanosecond-stepped
// clocks are not exact (5/1s: 2·10^8 > 2^18).
//
// RetryAfter and ResetAfter are checked for exactness against the limiter
// itself (probes at d − 1 and d), and against the model: the limiter is never
// later than the model, and earlier by at most one unit of time.
type twin struct {
	t      *testing.T
	lim    *Limiter
	m      *models.TokenBucket
	now    *atomic.Int64
	scale  *big.Rat // units per token: 2^F
	exact  bool
	unitNs int64 // one unit of time, rounded up
	band   int   // band calls so far
	// others is true when sweeps the twin does not see may run (the wrap
	// guard's): then the twin does not compare key counts.
	others bool
}

// exactGrid reports whether clock readings on a grid of g nanoseconds make
// the limiter match the model exactly; see twin.
func exactGrid(limit int, window, g time.Duration, fracBits uint) bool {
	a, b := uint64(g)*uint64(limit), uint64(window)
	for b != 0 {
		a, b = b, a%b
	}
	return uint64(window)/a <= 1<<fracBits
}

func newTwin(t *testing.T, limit int, window time.Duration, epoch int64, grid time.Duration) *twin {
	t.Helper()
	return newBurstTwin(t, limit, limit, window, epoch, grid)
}

// newBurstTwin is newTwin with a burst. (The exact-grid rule is the same:
// thresholds and the capacity are whole tokens, only the refill rate makes
// fractions.)
func newBurstTwin(t *testing.T, limit, burst int, window time.Duration, epoch int64, grid time.Duration) *twin {
	t.Helper()
	tw := &twin{t: t, now: new(atomic.Int64)}
	tw.now.Store(epoch)
	lim, err := New(limit, window, hotlimit.WithClock(tw.now.Load), hotlimit.WithBurst(burst))
	require.NoError(t, err)
	tw.lim = lim
	tw.m = models.NewTokenBucket(limit, burst, window, epoch)
	tw.scale = new(big.Rat).SetInt64(int64(lim.unit))
	tw.exact = exactGrid(limit, window, grid, lim.b.FracBits)
	tw.unitNs = int64((lim.b.Window + lim.b.PerWindow - 1) / lim.b.PerWindow)
	return tw
}

// units returns the limiter's tokens for key at the clock's time, in units,
// read from its state word.
func (tw *twin) units(key string) uint64 {
	t, _, _ := tw.lim.read()
	now, _ := tw.lim.b.Units(t)
	c, ok := tw.lim.cells.Peek(key)
	if !ok {
		return tw.lim.b.Cap
	}
	w := c.word.Load()
	if w == packed.BucketDead {
		return tw.lim.b.Cap
	}
	tokens, last := tw.lim.b.Unpack(w)
	tokens, _ = tw.lim.b.Refill(tokens, last, now)
	return tokens
}

// inUnits returns x tokens in units.
func (tw *twin) inUnits(x *big.Rat) *big.Rat { return new(big.Rat).Mul(x, tw.scale) }

// checkState checks that the limiter's tokens for key are within one unit of
// the model's.
func (tw *twin) checkState(key string, msg string) {
	t, _ := tw.m.At(tw.now.Load())
	x := tw.inUnits(tw.m.Tokens(key, t))
	diff := new(big.Rat).SetUint64(tw.units(key))
	diff.Sub(diff, x)
	one := big.NewRat(1, 1)
	if diff.Cmp(one) >= 0 || diff.Cmp(new(big.Rat).Neg(one)) <= 0 {
		tw.t.Errorf("%s: key %q: limiter %d units, model %s units", msg, key, tw.units(key), x.FloatString(3))
	}
}

// take makes Take(key, n) (Allow when allow and n == 1) at the clock's time,
// checks it against the model and records it there. probe also checks the
// durations by moving the clock and back.
func (tw *twin) take(key string, n int, allow, probe bool, msg string) hotlimit.Decision {
	t, m, lim := tw.t, tw.m, tw.lim
	now := tw.now.Load()
	mt, _ := m.At(now)
	x := m.Tokens(key, mt)
	var d hotlimit.Decision
	if allow && n == 1 {
		d = hotlimit.Decision{Allowed: lim.Allow(key)}
	} else {
		d = lim.Take(key, n)
	}
	if n < 0 || int64(n) > m.Burst {
		assert.False(t, d.Allowed, msg)
		assert.Equal(t, hotlimit.Never, d.RetryAfter, msg)
	} else if n == 0 {
		assert.True(t, d.Allowed, msg)
		assert.Zero(t, d.RetryAfter, msg)
	} else {
		thr := new(big.Rat).SetInt64(int64(n))
		xu, thrU := tw.inUnits(x), tw.inUnits(thr)
		switch {
		case x.Cmp(thr) >= 0:
			assert.True(t, d.Allowed, "%s: model has %s tokens for %d", msg, x.FloatString(6), n)
		case new(big.Rat).Sub(thrU, xu).Cmp(big.NewRat(1, 1)) >= 0:
			assert.False(t, d.Allowed, "%s: model has %s tokens for %d", msg, x.FloatString(6), n)
		default:
			tw.band++
			assert.False(t, tw.exact, "%s: band call in an exact twin: %s units for %s", msg, xu.FloatString(3), thrU.FloatString(0))
		}
		if d.Allowed {
			m.Admit(key, mt, int64(n))
		}
	}
	tw.checkState(key, msg)
	if allow && n == 1 {
		return d
	}

	// Remaining and the durations.
	after := m.Tokens(key, mt)
	assert.Equal(t, lim.limit, d.Limit, msg)
	assert.Equal(t, int(tw.units(key)>>lim.b.FracBits), d.Remaining, "%s: Remaining is the limiter's whole tokens", msg)
	if tw.exact {
		assert.Equal(t, models.FloorRat(after), int64(d.Remaining), "%s: Remaining, model %s", msg, after.FloatString(6))
	} else {
		assert.InDelta(t, models.FloorRat(after), d.Remaining, 1, "%s: Remaining, model %s", msg, after.FloatString(6))
	}
	if !d.Allowed && n >= 1 && int64(n) <= m.Burst {
		want := m.Wait(key, now, new(big.Rat).SetInt64(int64(n)))
		tw.closeTo(d.RetryAfter, want, "RetryAfter", msg)
		if probe {
			// RetryAfter is exact: 1 ns earlier, still denied (and that
			// denial says 1 ns); then, enough tokens.
			tw.now.Store(now + int64(d.RetryAfter) - 1)
			early := lim.Take(key, n)
			assert.False(t, early.Allowed, "%s: at RetryAfter−1", msg)
			assert.Equal(t, time.Duration(1), early.RetryAfter, "%s: at RetryAfter−1", msg)
			tw.now.Store(now + int64(d.RetryAfter))
			assert.GreaterOrEqual(t, lim.Take(key, 0).Remaining, n, "%s: at RetryAfter", msg)
			tw.now.Store(now)
		}
	} else if n >= 0 && int64(n) <= m.Burst {
		assert.Zero(t, d.RetryAfter, msg)
	}
	want := m.Wait(key, now, m.Cap)
	tw.closeTo(d.ResetAfter, want, "ResetAfter", msg)
	assert.Equal(t, d.ResetAfter == 0, tw.units(key) == lim.b.Cap, "%s: ResetAfter is 0 exactly when full", msg)
	if probe && d.ResetAfter > 0 {
		tw.now.Store(now + int64(d.ResetAfter) - 1)
		assert.Equal(t, time.Duration(1), lim.Take(key, 0).ResetAfter, "%s: at ResetAfter−1", msg)
		tw.now.Store(now + int64(d.ResetAfter))
		full := lim.Take(key, 0)
		assert.Zero(t, full.ResetAfter, "%s: at ResetAfter", msg)
		assert.Equal(t, lim.burst, full.Remaining, "%s: at ResetAfter", msg)
		tw.now.Store(now)
	}
	return d
}

// closeTo checks a duration of the limiter against the model's: never later,
// earlier by at most one unit of time.
func (tw *twin) closeTo(got time.Duration, model int64, what, msg string) {
	tw.t.Helper()
	if int64(got) > model || model-int64(got) > tw.unitNs {
		tw.t.Errorf("%s: %s %d ns, model %d ns (unit %d ns)", msg, what, int64(got), model, tw.unitNs)
	}
}

// sweep runs Sweep and mirrors its evictions in the model: a key the model
// holds full must be evicted, and an evicted key must be within one unit of
// full in the model.
func (tw *twin) sweep(msg string) {
	n := tw.lim.Sweep()
	t, _ := tw.m.At(tw.now.Load())
	evicted := 0
	for key := range tw.m.Keys() {
		x := tw.m.Tokens(key, t)
		_, kept := tw.lim.cells.Peek(key)
		if x.Cmp(tw.m.Cap) == 0 {
			assert.False(tw.t, kept, "%s: key %q is full, yet kept", msg, key)
		}
		if !kept {
			short := new(big.Rat).Sub(tw.m.Cap, x)
			assert.Negative(tw.t, tw.inUnits(short).Cmp(big.NewRat(1, 1)), "%s: key %q evicted %s tokens short", msg, key, short.FloatString(6))
			tw.m.Forget(key)
			evicted++
		}
	}
	if !tw.others {
		assert.Equal(tw.t, evicted, n, msg)
		assert.Equal(tw.t, tw.m.Len(), tw.lim.Len(), msg)
	}
}

func (tw *twin) String() string {
	return fmt.Sprintf("%d/%v burst %d F=%d exact=%t", tw.m.Limit, time.Duration(tw.lim.window), tw.m.Burst, tw.lim.b.FracBits, tw.exact)
}
