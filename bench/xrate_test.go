package bench

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// These tests prove the mapping README's "Coming from x/time/rate" gives: a
// rate.Limiter of rate r and burst b decides as tokenbucket.New(limit,
// window, hotlimit.WithBurst(b)) with limit/window = r (and as gcra.New with
// the same arguments), call for call on the same clock, but where the exact
// token count lies within a stated margin of the request: hotlimit's fixed
// point on one side, rate's float64 and its rounding of a wait down to the
// nanosecond on the other.
//
// Each policy is driven by a random sequence of (clock step, n), on a fresh
// key and a fresh rate.Limiter per run. internal/models' exact token bucket
// follows the decisions both sides made alike, and every decision of each
// side is checked against it: hotlimit within the margin its package
// documents, rate within its own (below). When the two sides disagree, the
// margins must explain it; the side that admitted is then made to have
// denied (hotlimit by a refund at the same instant, which restores the key
// exactly; rate by replaying what it admitted, without that call), so that
// the rest of the run compares them from the same state again.

// xratePolicy is a rate r = limit/window per second and a burst, with what
// the hotlimit limiters' documentation says of their arithmetic there.
type xratePolicy struct {
	limit  int
	window time.Duration
	burst  int
	// tbFrac is tokenbucket's F under this policy: the largest in [0, 32]
	// whose timestamp keeps 30 days and 4 fill times (tokenbucket's
	// package documentation, # State and ranges). Its unit is 2^−F token.
	tbFrac uint
	// gcraFrac is gcra's F when its ticks are fine (Limit/gcd(Window,
	// Limit) > 16), -1 when they are exact (gcra's # Arithmetic). Where
	// that documentation names no F, 4: it is never below.
	gcraFrac int
}

func (p xratePolicy) String() string {
	return fmt.Sprintf("r=%d/%v,b=%d", p.limit, p.window, p.burst)
}

// rate is the policy as x/time/rate's Limit: tokens per second.
func (p xratePolicy) rate() rate.Limit { return rate.Limit(float64(p.limit) / p.window.Seconds()) }

// perNs is the refill in tokens per nanosecond, as a float.
func (p xratePolicy) perNs() float64 { return float64(p.limit) / float64(p.window) }

// xratePolicies: rates that divide a second evenly and rates that do not
// (3/s, 7/s, 2 per 3 s, 5/3 per s, 1 per 7 ms, 17/s), bursts of 1, below and
// above the limit, and two coarse fixed points (units of 2^-10 and 2^-8
// token), where tokenbucket's margin is widest.
var xratePolicies = []xratePolicy{
	{limit: 1, window: time.Second, burst: 1, tbFrac: 20, gcraFrac: -1},
	{limit: 3, window: time.Second, burst: 1, tbFrac: 19, gcraFrac: -1},
	{limit: 3, window: time.Second, burst: 4, tbFrac: 18, gcraFrac: -1},
	{limit: 7, window: time.Second, burst: 2, tbFrac: 18, gcraFrac: -1},
	{limit: 2, window: 3 * time.Second, burst: 1, tbFrac: 20, gcraFrac: -1},
	{limit: 5, window: 2 * time.Second, burst: 3, tbFrac: 19, gcraFrac: -1},
	{limit: 100, window: time.Minute, burst: 10, tbFrac: 18, gcraFrac: -1},
	{limit: 1000, window: time.Second, burst: 50, tbFrac: 12, gcraFrac: -1},
	{limit: 17, window: time.Second, burst: 1, tbFrac: 18, gcraFrac: 30},
	{limit: 1, window: 7 * time.Millisecond, burst: 1, tbFrac: 16, gcraFrac: -1},
	{limit: 65536, window: time.Second, burst: 16, tbFrac: 10, gcraFrac: 4},
	{limit: 1000, window: time.Millisecond, burst: 20, tbFrac: 8, gcraFrac: -1},
}

// hotSide is a hotlimit limiter under test, with its documented margins
// against the exact model: it may admit a request when the model's tokens
// fall short of n by less than lo, and deny one when they exceed n by less
// than hi (0: never).
type hotSide struct {
	name   string
	lim    hotlimit.Refunder
	lo, hi *big.Rat
}

// xrateSide is a rate.Limiter and the calls it admitted, from which it is
// built again without one of them, or after a ReserveN that asked it
// something.
type xrateSide struct {
	r    rate.Limit
	b    int
	lim  *rate.Limiter
	kept []xrateCall
}

type xrateCall struct {
	at time.Time
	n  int
}

func newXrateSide(r rate.Limit, b int) *xrateSide {
	return &xrateSide{r: r, b: b, lim: rate.NewLimiter(r, b)}
}

func (x *xrateSide) allow(at time.Time, n int) bool {
	if !x.lim.AllowN(at, n) {
		return false
	}
	x.kept = append(x.kept, xrateCall{at, n})
	return true
}

// rebuild makes the limiter again from the calls kept: the same float64
// operations in the same order, so the same state.
func (x *xrateSide) rebuild(t *testing.T) {
	x.lim = rate.NewLimiter(x.r, x.b)
	for _, c := range x.kept {
		require.True(t, x.lim.AllowN(c.at, c.n), "a replayed call passes as it did")
	}
}

// undo forgets the last call it admitted.
func (x *xrateSide) undo(t *testing.T) {
	x.kept = x.kept[:len(x.kept)-1]
	x.rebuild(t)
}

// delay is Reservation.DelayFrom(at) of ReserveN(at, n), the wait rate's
// users read where hotlimit's users read RetryAfter (n) and ResetAfter (n =
// b, the wait until full), asked without changing the limiter.
func (x *xrateSide) delay(t *testing.T, at time.Time, n int) time.Duration {
	r := x.lim.ReserveN(at, n)
	require.True(t, r.OK(), "ReserveN(%d) within the burst", n)
	d := r.DelayFrom(at)
	x.rebuild(t)
	return d
}

// xrateTally counts what the comparison saw, to show that the margins were
// reached and not only allowed.
type xrateTally struct {
	decisions, disagreed    int
	hotEarly, rateEarly     int // admitted while the exact count fell short
	hotLate                 int // denied while the exact count sufficed
	remainingDiffers        int
	maxFloat                float64       // the largest |rate's tokens − exact|
	waitShorter, waitLonger time.Duration // hotlimit's waits against rate's delays
}

// TestTokenBucketDecidesAsXTimeRate drives tokenbucket and rate.Limiter
// with the same random (step, n) sequences under each policy and compares
// every decision, Remaining with ⌊Tokens⌋, RetryAfter with ReserveN(n)'s
// delay, ResetAfter with ReserveN(b)'s; where they differ, the exact token
// count lies within the documented margins: under 2^-F token of n where
// tokenbucket admits early (its fixed point), under r·1 ns where rate does
// (it rounds a wait below 1 ns down to none), and rate's float64 within
// (calls+1)·b·2^-50 token of the exact count.
func TestTokenBucketDecidesAsXTimeRate(t *testing.T) {
	for _, p := range xratePolicies {
		t.Run(p.String(), func(t *testing.T) {
			unit := new(big.Rat).SetFrac64(1, 1<<p.tbFrac)
			compareWithXrate(t, p, func(clock hotlimit.Clock) hotSide {
				lim, err := tokenbucket.New(p.limit, p.window, hotlimit.WithBurst(p.burst), hotlimit.WithClock(clock))
				require.NoError(t, err)
				// Documented: a request the model admits is admitted; one
				// it denies by less than a unit may pass.
				return hotSide{name: "tokenbucket", lim: lim, lo: unit, hi: new(big.Rat)}
			})
		})
	}
}

// TestGCRADecidesAsXTimeRate is TestTokenBucketDecidesAsXTimeRate for gcra:
// with exact ticks every field is the exact model's; with fine ticks (17/s)
// each decision is the model's on a clock floored to 2^-F token, so either
// way by less than that.
func TestGCRADecidesAsXTimeRate(t *testing.T) {
	for _, p := range xratePolicies {
		t.Run(p.String(), func(t *testing.T) {
			margin := new(big.Rat)
			if p.gcraFrac >= 0 {
				margin.SetFrac64(1, 1<<p.gcraFrac)
			}
			compareWithXrate(t, p, func(clock hotlimit.Clock) hotSide {
				lim, err := gcra.New(p.limit, p.window, hotlimit.WithBurst(p.burst), hotlimit.WithClock(clock))
				require.NoError(t, err)
				return hotSide{name: "gcra", lim: lim, lo: margin, hi: margin}
			})
		})
	}
}

// xrateRuns and xrateSteps size the comparison: runs of a fresh key each.
const xrateRuns, xrateSteps = 24, 160

func compareWithXrate(t *testing.T, p xratePolicy, build func(hotlimit.Clock) hotSide) {
	rng := rand.New(rand.NewPCG(uint64(p.limit)*1e6+uint64(p.burst), uint64(p.window)))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // rate's time of clock reading 0
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	hot := build(clock.Load)
	model := models.NewTokenBucket(p.limit, p.burst, p.window, clock.Load())
	fill := int64(p.burst) * int64(p.window) / int64(p.limit)
	var tally xrateTally
	for run := range xrateRuns {
		key := fmt.Sprintf("k%d", run)
		xr := newXrateSide(p.rate(), p.burst)
		for step := range xrateSteps {
			n := xrateN(rng, p.burst)
			now := clock.Add(xrateStep(rng, model, key, clock.Load(), n, p, fill))
			at := base.Add(time.Duration(now))
			msg := fmt.Sprintf("%s %v run %d step %d: Take(%d) at %d", hot.name, p, run, step, n, now)
			compareOne(t, p, &hot, xr, model, key, now, at, n, msg, &tally)
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%s %v: %d decisions, %d disagreements; %s admitted early %d times and late %d, rate early %d; Remaining ≠ ⌊Tokens⌋ %d times, rate's float error up to %.3g token, waits up to %v shorter and %v longer than rate's delays",
		hot.name, p, tally.decisions, tally.disagreed, hot.name, tally.hotEarly, tally.hotLate, tally.rateEarly,
		tally.remainingDiffers, tally.maxFloat, tally.waitShorter, tally.waitLonger)
}

// xrateN draws a request: mostly 1, some of several up to the burst, and
// the edges, 0, the burst, one above it and negative counts.
func xrateN(rng *rand.Rand, burst int) int {
	switch r := rng.IntN(100); {
	case r < 65:
		return 1
	case r < 80:
		return 1 + rng.IntN(burst)
	case r < 86:
		return burst
	case r < 91:
		return 0
	case r < 96:
		return burst + 1 + rng.IntN(2)
	default:
		return -1 - rng.IntN(burst)
	}
}

// xrateStep draws a clock step: often to the nanosecond at which the exact
// count reaches n, or one before or after it, where the margins decide;
// else none, a fraction of a refill, or past a full refill.
func xrateStep(rng *rand.Rand, m *models.TokenBucket, key string, now int64, n int, p xratePolicy, fill int64) int64 {
	perToken := int64(p.window) / int64(p.limit)
	switch r := rng.IntN(100); {
	case r < 40 && n >= 1 && n <= p.burst:
		d := m.Wait(key, now, new(big.Rat).SetInt64(int64(n)))
		return max(0, d+int64(rng.IntN(3))-1)
	case r < 55:
		return 0
	case r < 85:
		return rng.Int64N(2*perToken + 1)
	case r < 95:
		return rng.Int64N(fill + 1)
	default:
		return fill + rng.Int64N(fill+1)
	}
}

func compareOne(t *testing.T, p xratePolicy, hot *hotSide, xr *xrateSide, m *models.TokenBucket,
	key string, now int64, at time.Time, n int, msg string, tally *xrateTally) {
	tm, _ := m.At(now)
	x := m.Tokens(key, tm) // the exact count before the call
	xf, _ := x.Float64()
	tokens := xr.lim.TokensAt(at)
	floatErr := math.Abs(tokens - xf)
	tally.maxFloat = max(tally.maxFloat, floatErr)
	// rate keeps float64 tokens: each call's refill and take rounds by an
	// ulp of at most b, and d.Seconds()·r by a few more.
	eps := float64(len(xr.kept)+1) * float64(p.burst) * 0x1p-50
	require.LessOrEqual(t, floatErr, eps, "%s: rate's float64 tokens %v, exact %v", msg, tokens, x.FloatString(12))

	d, receipt := hot.lim.TakeReceipt(key, n)
	ok := xr.allow(at, n)
	tally.decisions++
	switch {
	case n < 0:
		// Documented difference: hotlimit never passes a negative count;
		// rate admits it and adds the tokens.
		require.False(t, d.Allowed, msg)
		require.Equal(t, hotlimit.Never, d.RetryAfter, msg)
		require.True(t, ok, "%s: rate admits a negative count", msg)
		xr.undo(t)
		return
	case n > p.burst:
		require.False(t, d.Allowed, msg)
		require.Equal(t, hotlimit.Never, d.RetryAfter, msg)
		require.False(t, ok, "%s: rate denies more than its burst", msg)
	case n == 0:
		require.True(t, d.Allowed, msg)
		require.True(t, ok, "%s: rate passes 0", msg)
	default:
		want := new(big.Rat).SetInt64(int64(n))
		short := new(big.Rat).Sub(want, x) // > 0: the exact model denies
		// hotlimit within its documented margins.
		if d.Allowed && short.Sign() > 0 {
			tally.hotEarly++
			require.Negative(t, short.Cmp(hot.lo), "%s: %s admits %s token short, its margin is %s", msg, hot.name, short.FloatString(12), hot.lo.FloatString(12))
		}
		if !d.Allowed && short.Sign() <= 0 {
			tally.hotLate++
			require.Negative(t, new(big.Rat).Neg(short).Cmp(hot.hi), "%s: %s denies with %s token to spare, its margin is %s", msg, hot.name, new(big.Rat).Neg(short).FloatString(12), hot.hi.FloatString(12))
		}
		// rate: it admits when its wait, (n − tokens)/r, rounds down to
		// 0 ns, so up to r·1 ns short, give or take its float error.
		sf, _ := short.Float64()
		early := p.perNs()
		if ok && short.Sign() > 0 {
			tally.rateEarly++
		}
		if ok {
			require.Less(t, sf, early+eps, "%s: rate admits %g token short", msg, sf)
		} else {
			require.Greater(t, sf, early*(1-0x1p-40)-eps, "%s: rate denies %g token short", msg, sf)
		}
		if d.Allowed != ok {
			tally.disagreed++
			if d.Allowed {
				hot.lim.Refund(key, receipt) // at the Take's instant: exactly as before it
			} else {
				xr.undo(t)
			}
			return
		}
		if ok {
			m.Admit(key, tm, int64(n))
		} else {
			checkWait(t, p, hot, xr, m, key, now, at, want, d.RetryAfter, n, msg+": RetryAfter", tally)
		}
	}
	// The decision both made: Remaining, and the wait until full.
	after := m.Tokens(key, tm)
	lo := models.FloorRat(new(big.Rat).Sub(after, hot.hi))
	hi := models.FloorRat(new(big.Rat).Add(after, hot.lo))
	assert.GreaterOrEqual(t, d.Remaining, max(0, int(lo)), "%s: Remaining, exact %s", msg, after.FloatString(12))
	assert.LessOrEqual(t, d.Remaining, int(hi), "%s: Remaining, exact %s", msg, after.FloatString(12))
	if float64(d.Remaining) != math.Floor(max(0, xr.lim.TokensAt(at))) {
		tally.remainingDiffers++
	}
	checkWait(t, p, hot, xr, m, key, now, at, new(big.Rat).SetInt64(int64(p.burst)), d.ResetAfter, p.burst, msg+": ResetAfter", tally)
}

// checkWait compares a hotlimit wait for want tokens (RetryAfter, or
// ResetAfter for the burst) with the exact model's, within its margins,
// and with rate's ReserveN delay, within one nanosecond (rate rounds its
// wait down) and its float error.
func checkWait(t *testing.T, p xratePolicy, hot *hotSide, xr *xrateSide, m *models.TokenBucket,
	key string, now int64, at time.Time, want *big.Rat, got time.Duration, n int, msg string, tally *xrateTally) {
	exact := m.Wait(key, now, want)
	least := m.Wait(key, now, new(big.Rat).Sub(want, hot.lo))
	// Above: the exact wait, plus the refill time of hi (rounded up).
	most := exact + models.CeilRat(new(big.Rat).Quo(hot.hi, new(big.Rat).SetFrac64(int64(p.limit), int64(p.window))))
	require.GreaterOrEqual(t, int64(got), least, "%s: exact wait %d ns", msg, exact)
	require.LessOrEqual(t, int64(got), most, "%s: exact wait %d ns", msg, exact)
	rd := xr.delay(t, at, n)
	// rate's delay is ⌊(n − tokens)/r⌋ in ns of float64 tokens: the
	// exact ⌈wait⌉ or one less, moved by its float error over r.
	slack := int64(math.Ceil(float64(len(xr.kept)+1)*float64(p.burst)*0x1p-50/p.perNs() + float64(exact)*0x1p-50))
	require.GreaterOrEqual(t, int64(rd), exact-1-slack, "%s: rate's delay, exact wait %d ns", msg, exact)
	require.LessOrEqual(t, int64(rd), exact+slack, "%s: rate's delay, exact wait %d ns", msg, exact)
	if got < rd {
		tally.waitShorter = max(tally.waitShorter, rd-got)
	} else {
		tally.waitLonger = max(tally.waitLonger, got-rd)
	}
}

// TestWaitNAgainstXTimeRate runs rate.Limiter.WaitN and hotlimit.WaitN side
// by side where hotlimit.WaitN's documentation (# Compared with
// x/time/rate) says how they compare: a wait past the context's deadline
// fails at once on both, without sleeping and taking nothing, and only
// hotlimit's error wraps context.DeadlineExceeded; more than the burst fails
// at once on both, hotlimit's with ErrNeverPasses, and a context already
// done is reported first by hotlimit only; n == 0 passes on both; n < 0
// passes on rate, adding tokens, and never on hotlimit. rate reads
// time.Now, so its waits here are either hours (never slept: its error
// comes while the context lasts) or none.
func TestWaitNAgainstXTimeRate(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	// One per 2 h, drained: the next request waits 2 h.
	lim, err := tokenbucket.New(1, 2*time.Hour, hotlimit.WithClock(clock.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	xr := rate.NewLimiter(rate.Every(2*time.Hour), 1)
	require.True(t, xr.Allow())
	var slept []time.Duration
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock.Add(int64(d))
		return ctx.Err()
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	before := lim.Take("k", 0)
	err = hotlimit.WaitN(ctx, lim, "k", 1, sleep)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a wait of 2 h under a deadline 1 h away")
	require.NoError(t, ctx.Err(), "the error came at once, long before the deadline")
	require.Empty(t, slept, "nothing slept")
	require.Equal(t, before, lim.Take("k", 0), "nothing taken")
	xerr := xr.WaitN(ctx, 1)
	require.ErrorContains(t, xerr, "would exceed context deadline")
	require.NotErrorIs(t, xerr, context.DeadlineExceeded, "rate's error does not wrap it")
	require.NoError(t, ctx.Err(), "rate's came at once too")
	require.Less(t, xr.Tokens(), 0.5, "and reserved nothing")

	// Under a deadline 3 h away both wait; hotlimit sleeps (here on its
	// fake clock) the RetryAfter and passes.
	long, cancelLong := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancelLong()
	require.NoError(t, hotlimit.WaitN(long, lim, "k", 1, sleep))
	require.Equal(t, []time.Duration{2 * time.Hour}, slept)
	slept = nil

	// More than the burst: both fail at once; with a context already done
	// hotlimit reports the context, rate the burst.
	require.ErrorIs(t, hotlimit.WaitN(ctx, lim, "k", 2, sleep), hotlimit.ErrNeverPasses)
	require.ErrorContains(t, xr.WaitN(ctx, 2), "exceeds limiter's burst")
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	require.ErrorIs(t, hotlimit.WaitN(done, lim, "k", 2, sleep), context.Canceled)
	require.ErrorContains(t, xr.WaitN(done, 2), "exceeds limiter's burst")
	// n == 0: nil on both, ctx.Err() on both once the context is done.
	require.NoError(t, hotlimit.WaitN(ctx, lim, "k", 0, sleep))
	require.NoError(t, xr.WaitN(ctx, 0))
	require.ErrorIs(t, hotlimit.WaitN(done, lim, "k", 0, sleep), context.Canceled)
	require.ErrorIs(t, xr.WaitN(done, 0), context.Canceled)
	// n < 0: rate passes and adds the tokens, hotlimit never passes it.
	require.ErrorIs(t, hotlimit.WaitN(ctx, lim, "k", -1, sleep), hotlimit.ErrNeverPasses)
	require.False(t, lim.Allow("k"), "nothing added")
	require.NoError(t, xr.WaitN(ctx, -1))
	require.True(t, xr.Allow(), "rate added the token")
	require.Empty(t, slept)
}
