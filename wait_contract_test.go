package hotlimit_test

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/hotlimit/hotlimit/unlimited"
)

// waitLimiter is a limiter a caller waits on, made on a fake clock, with
// capacity the most requests that ever pass at once.
type waitLimiter struct {
	name     string
	capacity int
	// denierRetries: a denial's RetryAfter may leave out a limit that
	// denies the request again after it (a sliding log asked about more
	// than one request; see package composite).
	denierRetries bool
	new           func(t *testing.T, clock hotlimit.Clock) hotlimit.Limiter
}

// waitLimiters are every in-memory algorithm at 5 per hour (the token
// bucket with a burst of 3), a composite of two, and a service rule of
// two limits, which a caller waits on through serviceLimiter.
var waitLimiters = []waitLimiter{
	{"tokenbucket", 3, false, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		l, err := tokenbucket.New(5, time.Hour, hotlimit.WithClock(c), hotlimit.WithBurst(3))
		require.NoError(t, err)
		return l
	}},
	{"gcra", 5, false, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		l, err := gcra.New(5, time.Hour, hotlimit.WithClock(c))
		require.NoError(t, err)
		return l
	}},
	{"fixedwindow", 5, false, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		l, err := fixedwindow.New(5, time.Hour, hotlimit.WithClock(c))
		require.NoError(t, err)
		return l
	}},
	{"slidingcounter", 5, false, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		l, err := slidingcounter.New(5, time.Hour, hotlimit.WithClock(c))
		require.NoError(t, err)
		return l
	}},
	{"slidinglog", 5, false, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		l, err := slidinglog.New(5, time.Hour, hotlimit.WithClock(c))
		require.NoError(t, err)
		return l
	}},
	{"composite", 4, false, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		hour, err := gcra.New(5, time.Hour, hotlimit.WithClock(c))
		require.NoError(t, err)
		day, err := fixedwindow.New(4, 24*time.Hour, hotlimit.WithClock(c))
		require.NoError(t, err)
		l, err := composite.New(hour, day)
		require.NoError(t, err)
		return l
	}},
	{"service", 4, true, func(t *testing.T, c hotlimit.Clock) hotlimit.Limiter {
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{
			{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Hour},
			{Algorithm: hotlimit.SlidingLog, Limit: 4, Window: 24 * time.Hour, Scope: hotlimit.PerUser},
		}}, hotlimit.WithClock(c))
		require.NoError(t, err)
		return serviceLimiter{s: s, api: "GET /"}
	}},
}

// twins returns two limiters of w on the clock f: the one waited on, and
// a control that is told only what the wait should have done, so that
// comparing their reports (Take of 0) checks what the wait took.
func twins(t *testing.T, w waitLimiter, f *fakeTime) (waited, control hotlimit.Limiter) {
	return w.new(t, f.now.Load), w.new(t, f.now.Load)
}

// drain takes all of key's quota from both.
func drain(t *testing.T, w waitLimiter, key string, ls ...hotlimit.Limiter) {
	for _, l := range ls {
		require.True(t, l.Take(key, w.capacity).Allowed, "%s", w.name)
	}
}

func sameState(t *testing.T, w waitLimiter, key string, waited, control hotlimit.Limiter, msg string) {
	t.Helper()
	assert.Equal(t, control.Take(key, 0), waited.Take(key, 0), "%s: %s", w.name, msg)
}

// TestWaitTakesNothingUnlessItPasses: on every limiter, a wait that ends
// without passing (its context cancelled while it sleeps; a deadline
// before RetryAfter; a request that never passes; a negative count; n of
// 0) leaves the key exactly as a control that was not asked, and sleeps
// only when it can pass; a wait that passes has taken exactly its n, as a
// control's Take at the same time, after one sleep of the RetryAfter.
func TestWaitTakesNothingUnlessItPasses(t *testing.T) {
	for _, w := range waitLimiters {
		t.Run(w.name, func(t *testing.T) {
			f := new(fakeTime)
			f.now.Store(int64(1000 * time.Hour))
			waited, control := twins(t, w, f)
			drain(t, w, "k", waited, control)

			// Cancelled at the end of its sleep, when the request would
			// pass: it is not asked for again.
			ctx, cancel := context.WithCancel(context.Background())
			cancelling := func(ctx context.Context, d time.Duration) error {
				f.now.Add(int64(d))
				cancel()
				return ctx.Err()
			}
			err := hotlimit.Wait(ctx, waited, "k", hotlimit.WithSleep(cancelling))
			assert.ErrorIs(t, err, context.Canceled)
			sameState(t, w, "k", waited, control, "cancelled while sleeping")
			for _, l := range []hotlimit.Limiter{waited, control} {
				if r := l.Take("k", 0).Remaining; r > 0 {
					require.True(t, l.Take("k", r).Allowed, "%s: drained again", w.name)
				}
			}

			// A deadline (a minute) before the RetryAfter (minutes at 5 per
			// hour): at once, without sleeping.
			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = hotlimit.WaitN(ctx, waited, "k", w.capacity, hotlimit.WithSleep(f.sleep))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), "would pass the context's deadline")
			sameState(t, w, "k", waited, control, "a deadline before RetryAfter")

			for _, n := range []int{w.capacity + 1, 6, -1, math.MinInt, math.MaxInt} {
				err = hotlimit.WaitN(context.Background(), waited, "k", n, hotlimit.WithSleep(f.sleep))
				assert.ErrorIs(t, err, hotlimit.ErrNeverPasses, "n %d", n)
				sameState(t, w, "k", waited, control, "a request that never passes")
			}
			require.NoError(t, hotlimit.WaitN(context.Background(), waited, "k", 0, hotlimit.WithSleep(f.sleep)))
			sameState(t, w, "k", waited, control, "n == 0")
			assert.Empty(t, f.slept, "none of these slept")

			// A wait that passes, after exactly its RetryAfter.
			require.NoError(t, hotlimit.WaitN(context.Background(), waited, "k", 2, hotlimit.WithSleep(f.sleep)))
			if w.denierRetries {
				assert.NotEmpty(t, f.slept)
			} else {
				assert.Len(t, f.slept, 1, "the same request passes RetryAfter later: %v", f.slept)
			}
			require.True(t, control.Take("k", 2).Allowed, "the control, at the time the wait passed")
			sameState(t, w, "k", waited, control, "the wait took its 2")
		})
	}
}

// askedOnce denies its first request with RetryAfter, telling asked, and
// passes any later one.
type askedOnce struct {
	retryAfter time.Duration
	asked      chan struct{}
	calls      atomic.Int64
}

func (a *askedOnce) Allow(key string) bool { return a.Take(key, 1).Allowed }
func (a *askedOnce) Take(string, int) hotlimit.Decision {
	if a.calls.Add(1) == 1 {
		close(a.asked)
		return hotlimit.Decision{Limit: 1, RetryAfter: a.retryAfter}
	}
	return hotlimit.Decision{Allowed: true, Limit: 1}
}

// TestWaitEndsOnAHugeRetryAfter: the default timer, given a RetryAfter just
// below Never (292 years), neither overflows into firing at once nor
// outlasts the context: the wait ends with the cancellation, never asking
// again; and the timer alone, under a 10 ms deadline, ends at the deadline.
func TestWaitEndsOnAHugeRetryAfter(t *testing.T) {
	for _, retry := range []time.Duration{hotlimit.Never - 1, hotlimit.Never / 2, 1 << 62} {
		a := &askedOnce{retryAfter: retry, asked: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- hotlimit.Wait(ctx, a, "k") }()
		<-a.asked
		cancel()
		err := <-done
		assert.ErrorIs(t, err, context.Canceled, "RetryAfter %v", retry)
		assert.Equal(t, int64(1), a.calls.Load(), "RetryAfter %v: asked once", retry)

		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
		err = hotlimit.SleepTimer(ctx, retry)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "RetryAfter %v: the timer fired", retry)
	}
}

// TestWaitDiffersFromRateAsDocumented pins where WaitN's contract differs
// from x/time/rate's Limiter.WaitN, as its documentation says: a context
// already done is reported before a request that can never pass; the
// deadline is checked against each RetryAfter in turn, and its error, at
// once, wraps context.DeadlineExceeded; n < 0 never passes.
func TestWaitDiffersFromRateAsDocumented(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 5, time.Second, f)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	err := hotlimit.WaitN(done, lim, "k", 6, hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.ErrorIs(t, hotlimit.WaitN(context.Background(), lim, "k", -1, hotlimit.WithSleep(f.sleep)), hotlimit.ErrNeverPasses)

	// Denied again after the first sleep, with a RetryAfter past the
	// deadline: the error comes then, without a second sleep.
	s := &scripted{script: []hotlimit.Decision{{Limit: 1, RetryAfter: time.Second}, {Limit: 1, RetryAfter: 2 * time.Hour}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	err = hotlimit.Wait(ctx, s, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, []time.Duration{time.Second}, f.slept)
	assert.Equal(t, 2, s.calls)
	assert.Zero(t, s.taken)
}

// TestWaitNeverOnACompositeAtOnce: a composite of 5 per hour and 4 per day
// is asked for 5: the first child could pass it later, the second never.
// The composite denies it with RetryAfter Never, as every limiter denies a
// request above its burst, so that WaitN fails at once instead of sleeping
// the first child's RetryAfter to meet the second's Never; and it takes
// nothing, not even for the instant of a refund.
func TestWaitNeverOnACompositeAtOnce(t *testing.T) {
	f := new(fakeTime)
	f.now.Store(int64(1000 * time.Hour))
	hour, err := gcra.New(5, time.Hour, hotlimit.WithClock(f.now.Load))
	require.NoError(t, err)
	day, err := fixedwindow.New(4, 24*time.Hour, hotlimit.WithClock(f.now.Load))
	require.NoError(t, err)
	c, err := composite.New(hour, day)
	require.NoError(t, err)
	require.True(t, c.Take("k", 1).Allowed)
	assert.Equal(t, 4, c.Burst(), "the least of its children's")

	d := c.Take("k", 5)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, c.Take("k", 0).Remaining, d.Remaining, "the report of the key, unchanged")
	err = hotlimit.WaitN(context.Background(), c, "k", 5, hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.Empty(t, f.slept, "no sleep before the Never")
	assert.Equal(t, 3, day.Take("k", 0).Remaining, "the second child holds the 1 taken, no more")
	assert.Equal(t, 4, hour.Take("k", 0).Remaining, "the first child holds the 1 taken, no more")
}

// Every limiter of this module says its burst.
var _ = []hotlimit.Burster{
	(*tokenbucket.Limiter)(nil), (*gcra.Limiter)(nil), (*fixedwindow.Limiter)(nil),
	(*slidingcounter.Limiter)(nil), (*slidinglog.Limiter)(nil), (*composite.Limiter)(nil),
	(*unlimited.Limiter)(nil),
}

// zeroDenier denies with RetryAfter 0 until its clock reaches open, then
// passes, counting its calls: a limiter that breaks the Decision contract
// (a denial says when to retry), as a foreign or a fake one may.
type zeroDenier struct {
	now   *atomic.Int64
	open  int64
	calls int
}

func (z *zeroDenier) Allow(key string) bool { return z.Take(key, 1).Allowed }
func (z *zeroDenier) Take(string, int) hotlimit.Decision {
	z.calls++
	return hotlimit.Decision{Allowed: z.now.Load() >= z.open, Limit: 1}
}

// TestWaitBacksOffOnRetryAfterZero: denied again and again with RetryAfter
// 0, a wait does not spin: each sleep doubles the last, from a nanosecond
// (capped), so that a second of such denials asks the limiter some
// thirty-odd times, not a billion; a RetryAfter it is given is slept as is.
func TestWaitBacksOffOnRetryAfterZero(t *testing.T) {
	f := new(fakeTime)
	z := &zeroDenier{now: &f.now, open: int64(time.Second)}
	sleep := func(ctx context.Context, d time.Duration) error {
		if len(f.slept) >= 1000 {
			return context.Canceled // it spins
		}
		return f.sleep(ctx, d)
	}
	require.NoError(t, hotlimit.Wait(context.Background(), z, "k", hotlimit.WithSleep(sleep)))
	assert.LessOrEqual(t, z.calls, 40)
	assert.Equal(t, time.Nanosecond, f.slept[0])
	for i := 1; i < len(f.slept); i++ {
		assert.Equal(t, 2*f.slept[i-1], f.slept[i], "sleep %d", i)
	}

	// Capped at a second: a limiter that opens after a minute is asked
	// about once a second by then.
	f.slept, f.now = nil, atomic.Int64{}
	z = &zeroDenier{now: &f.now, open: int64(time.Minute)}
	require.NoError(t, hotlimit.Wait(context.Background(), z, "k", hotlimit.WithSleep(sleep)))
	assert.Equal(t, time.Second, slices.Max(f.slept))
	assert.LessOrEqual(t, z.calls, 31+60)

	f.slept = nil
	s := &scripted{script: []hotlimit.Decision{{}, {}, {RetryAfter: time.Millisecond}, {}, {Allowed: true}}}
	require.NoError(t, hotlimit.Wait(context.Background(), s, "k", hotlimit.WithSleep(f.sleep)))
	assert.Equal(t, []time.Duration{time.Nanosecond, 2 * time.Nanosecond, time.Millisecond, time.Nanosecond}, f.slept,
		"a RetryAfter given restarts the back-off")
}

// TestWaitOnNoLimiter: a nil Limiter is an error naming it, not a panic,
// and so is a nil pointer of a limiter type (a *tokenbucket.Limiter
// declared and never built), whose Take would dereference it.
func TestWaitOnNoLimiter(t *testing.T) {
	var l hotlimit.Limiter
	var tb *tokenbucket.Limiter
	for _, l := range []hotlimit.Limiter{l, tb} {
		var err error
		require.NotPanics(t, func() { err = hotlimit.WaitN(context.Background(), l, "k", 1) }, "%T", l)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		assert.EqualError(t, err, "hotlimit: WaitN on a nil Limiter: invalid config")
	}
}

// allowAll is a Limiter of a slice type that allows every request; its nil
// value is an empty one, as usable.
type allowAll []string

func (allowAll) Allow(string) bool                  { return true }
func (allowAll) Take(string, int) hotlimit.Decision { return hotlimit.Decision{Allowed: true} }

// TestWaitOnNilSliceLimiter: a nil value of a limiter type that is a slice
// is a limiter (it is an empty slice to its methods), not a nil Limiter.
func TestWaitOnNilSliceLimiter(t *testing.T) {
	assert.NoError(t, hotlimit.WaitN(context.Background(), allowAll(nil), "k", 1))
}

// TestWaitOnNoContext: a nil context is an error naming it, as a nil
// Limiter is, not a panic, and the limiter is not asked.
func TestWaitOnNoContext(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 5, time.Second, f)
	var ctx context.Context // a caller's bug: context.TODO() is the context of no context
	var err error
	require.NotPanics(t, func() { err = hotlimit.WaitN(ctx, lim, "k", 1, hotlimit.WithSleep(f.sleep)) })
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.EqualError(t, err, "hotlimit: WaitN with a nil Context: invalid config")
	assert.Zero(t, lim.Len(), "the limiter was not asked: no key inserted")
	require.NotPanics(t, func() { err = hotlimit.Wait(ctx, lim, "k") })
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
}
