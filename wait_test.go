package hotlimit_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// fakeTime is a fake clock and a sleep that advances it, recording each
// sleep.
type fakeTime struct {
	now   atomic.Int64
	slept []time.Duration
}

func (f *fakeTime) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.slept = append(f.slept, d)
	f.now.Add(int64(d))
	return nil
}

func newBucket(t *testing.T, limit int, window time.Duration, f *fakeTime) *tokenbucket.Limiter {
	t.Helper()
	lim, err := tokenbucket.New(limit, window, hotlimit.WithClock(f.now.Load))
	require.NoError(t, err)
	return lim
}

// TestWaitPassesAfterRetryAfter: 5 per second, drained: a wait for 2 sleeps
// exactly 400 ms, once, and takes them.
func TestWaitPassesAfterRetryAfter(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 5, time.Second, f)
	require.True(t, lim.Take("k", 5).Allowed)
	require.NoError(t, hotlimit.WaitN(context.Background(), lim, "k", 2, hotlimit.WithSleep(f.sleep)))
	assert.Equal(t, []time.Duration{400 * time.Millisecond}, f.slept)
	assert.Zero(t, lim.Take("k", 0).Remaining, "the 2 were taken")

	require.NoError(t, hotlimit.Wait(context.Background(), lim, "k", hotlimit.WithSleep(f.sleep)))
	assert.Equal(t, []time.Duration{400 * time.Millisecond, 200 * time.Millisecond}, f.slept)

	require.NoError(t, hotlimit.WaitN(context.Background(), lim, "k", 0, hotlimit.WithSleep(f.sleep)))
	assert.Len(t, f.slept, 2, "n == 0 never waits")
	require.NoError(t, hotlimit.Wait(context.Background(), lim, "fresh", hotlimit.WithSleep(f.sleep)))
	assert.Len(t, f.slept, 2, "a request that passes never waits")
}

// scripted is a Limiter that answers with a script of decisions, and counts
// what it admits.
type scripted struct {
	script []hotlimit.Decision
	calls  int
	taken  int
}

func (s *scripted) Allow(key string) bool { return s.Take(key, 1).Allowed }

func (s *scripted) Take(_ string, n int) hotlimit.Decision {
	d := s.script[min(s.calls, len(s.script)-1)]
	s.calls++
	if d.Allowed {
		s.taken += n
	}
	return d
}

// TestWaitRetriesUntilPassed: denied again after a wait (as a composite's
// other child may deny), it waits again; a denial with no RetryAfter still
// waits a nanosecond, never spinning.
func TestWaitRetriesUntilPassed(t *testing.T) {
	f := new(fakeTime)
	s := &scripted{script: []hotlimit.Decision{
		{RetryAfter: time.Second},
		{RetryAfter: 3 * time.Second},
		{},
		{Allowed: true},
	}}
	require.NoError(t, hotlimit.WaitN(context.Background(), s, "k", 3, hotlimit.WithSleep(f.sleep)))
	assert.Equal(t, []time.Duration{time.Second, 3 * time.Second, time.Nanosecond}, f.slept)
	assert.Equal(t, 4, s.calls)
	assert.Equal(t, 3, s.taken)
}

// TestWaitCancels: a context done before, during the sleep, or whose deadline
// comes before RetryAfter ends the wait with its error, and takes nothing.
func TestWaitCancels(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 5, time.Second, f)
	require.True(t, lim.Take("k", 4).Allowed)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := hotlimit.Wait(ctx, lim, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, lim.Take("k", 0).Remaining, "nothing taken, though one would pass")

	// Cancelled during the sleep.
	ctx, cancel = context.WithCancel(context.Background())
	sleep := func(ctx context.Context, d time.Duration) error {
		f.now.Add(int64(d / 2))
		cancel()
		return ctx.Err()
	}
	err = hotlimit.WaitN(ctx, lim, "k", 3, hotlimit.WithSleep(sleep))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, lim.Take("k", 0).Remaining, "nothing taken: 1 + 200 ms of refill")

	// A deadline before RetryAfter: no sleep at all.
	ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	day := newBucket(t, 1, 24*time.Hour, f)
	require.True(t, day.Allow("k"))
	err = hotlimit.Wait(ctx, day, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "hotlimit: waiting 24h0m0s would pass the context's deadline")
	assert.Empty(t, f.slept)
}

// TestWaitNever: a request that can never pass fails at once.
func TestWaitNever(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 5, time.Second, f)
	for _, n := range []int{6, -1} {
		err := hotlimit.WaitN(context.Background(), lim, "k", n, hotlimit.WithSleep(f.sleep))
		assert.ErrorIs(t, err, hotlimit.ErrNeverPasses, "n %d", n)
	}
	err := hotlimit.WaitN(context.Background(), lim, "k", 6)
	assert.EqualError(t, err, "hotlimit: 6 requests at once, more than ever pass at once: at most 5 (the burst, or the limit without one): the request can never pass")
	assert.Empty(t, f.slept)
	assert.Zero(t, lim.Len(), "nothing taken, no key inserted")
}

// TestWaitNeverNamesTheBurst: with a burst below the limit, a request of
// more than the burst can never pass though it is within the limit, and the
// error says so with the burst, 2, as the bound, not the limit, 10, which a
// request of 3 is within; a negative count is named as such.
func TestWaitNeverNamesTheBurst(t *testing.T) {
	lim, err := gcra.New(10, time.Second, hotlimit.WithBurst(2))
	require.NoError(t, err)
	err = hotlimit.WaitN(context.Background(), lim, "k", 3)
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.EqualError(t, err, "hotlimit: 3 requests at once, more than ever pass at once: at most 2 (the burst, or the limit without one): the request can never pass")
	err = hotlimit.WaitN(context.Background(), lim, "k", -1)
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.EqualError(t, err, "hotlimit: -1 requests, a negative count: the request can never pass")
	assert.Zero(t, lim.Len(), "nothing taken, no key inserted")
}

// TestWaitRealTimer: the default sleep, on the real clock: a wait of 20 ms
// passes, and a wait cancelled while sleeping returns at once. The bounds
// are 10 s, 500 times the short wait, so that a loaded machine (a
// descheduled goroutine, qemu) cannot break them, while a sleep of the wrong
// length still does: of ResetAfter (the hour the drained bucket takes to
// fill), or in the wrong unit (20 s and more); and a cancellation ignored
// would sleep the hour.
func TestWaitRealTimer(t *testing.T) {
	const bound = 10 * time.Second
	const limit = 50 * 3600 // one token every 20 ms
	lim, err := tokenbucket.New(limit, time.Hour)
	require.NoError(t, err)
	require.True(t, lim.Take("k", limit).Allowed)
	start := time.Now()
	require.NoError(t, hotlimit.WaitN(context.Background(), lim, "k", 1))
	assert.Less(t, time.Since(start), bound)

	slow, err := tokenbucket.New(1, time.Hour)
	require.NoError(t, err)
	require.True(t, slow.Allow("k"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	start = time.Now()
	err = hotlimit.Wait(ctx, slow, "k")
	assert.True(t, errors.Is(err, context.Canceled))
	assert.Less(t, time.Since(start), bound)
}

// denier denies every request, reporting with RetryAfter 0 (as a report of
// n == 0 may), and counts the calls.
type denier struct{ calls atomic.Int64 }

func (d *denier) Allow(string) bool { d.calls.Add(1); return false }
func (d *denier) Take(_ string, n int) hotlimit.Decision {
	d.calls.Add(1)
	if n == 0 {
		return hotlimit.Decision{Limit: 1}
	}
	return hotlimit.Decision{Limit: 1, RetryAfter: time.Second}
}

// TestWaitZeroReturnsAtOnce: WaitN of 0 returns nil without asking the
// limiter, even one that reports the key denied, instead of sleeping and
// asking again for as long as the context lasts.
func TestWaitZeroReturnsAtOnce(t *testing.T) {
	var d denier
	sleeps := 0
	err := hotlimit.WaitN(context.Background(), &d, "k", 0, hotlimit.WithSleep(func(ctx context.Context, _ time.Duration) error {
		if sleeps++; sleeps > 10 {
			return context.Canceled // the bug: it would sleep for ever
		}
		return nil
	}))
	assert.NoError(t, err)
	assert.Zero(t, sleeps)
	assert.Zero(t, d.calls.Load())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, hotlimit.WaitN(ctx, &d, "k", 0), context.Canceled, "a done context still wins")
}

// TestWaitClockJumps: a clock that steps back during a sleep refills
// nothing (a step back counts as no time passing), so the wait asks again
// and waits until the clock is back where it was plus the refill, never
// passing early; one that jumps far forward lets the request pass at once. A context whose deadline
// is already past ends the wait before the limiter is asked.
func TestWaitClockJumps(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 5, time.Second, f)
	require.True(t, lim.Take("k", 5).Allowed)
	var slept []time.Duration
	back := func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		if len(slept) == 1 {
			f.now.Add(-int64(time.Hour)) // the clock steps back an hour
			return nil
		}
		return f.sleep(ctx, d)
	}
	require.NoError(t, hotlimit.Wait(context.Background(), lim, "k", hotlimit.WithSleep(back)))
	assert.Equal(t, []time.Duration{200 * time.Millisecond, time.Hour + 200*time.Millisecond}, slept)
	assert.Zero(t, lim.Take("k", 0).Remaining, "one taken, on the refill of the second sleep")

	slept = nil
	forward := func(context.Context, time.Duration) error {
		slept = append(slept, 0)
		f.now.Add(int64(1000 * time.Hour))
		return nil
	}
	require.NoError(t, hotlimit.WaitN(context.Background(), lim, "k", 5, hotlimit.WithSleep(forward)))
	assert.Len(t, slept, 1)
	assert.Zero(t, lim.Take("k", 0).Remaining, "all 5 taken")

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Hour))
	defer cancel()
	err := hotlimit.Wait(ctx, lim, "fresh", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1, lim.Len(), "the limiter was not asked: no key inserted")
}

// backend is a ContextTaker as redislimit's limiters are: TakeContext
// answers by its function, Take fails the test (WaitN must pass its
// context).
type backend struct {
	t    *testing.T
	take func(ctx context.Context, n int) (hotlimit.Decision, error)
}

func (b *backend) Allow(key string) bool { return b.Take(key, 1).Allowed }
func (b *backend) Take(string, int) hotlimit.Decision {
	b.t.Error("Take called: the context was not passed")
	return hotlimit.Decision{Limit: 1, RetryAfter: time.Second}
}
func (b *backend) TakeContext(ctx context.Context, _ string, n int) (hotlimit.Decision, error) {
	return b.take(ctx, n)
}

var errBackendDown = errors.New("backend down")

// TestWaitPassesItsContextToTheBackend: WaitN asks a ContextTaker under its
// context, so a cancellation ends a decision in flight (a round trip to a
// server that does not answer) instead of waiting for it, and a pass of the
// failure policy ends the wait as a pass.
func TestWaitPassesItsContextToTheBackend(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan struct{})
	hung := &backend{t: t, take: func(ctx context.Context, n int) (hotlimit.Decision, error) {
		close(asked)
		<-ctx.Done() // the round trip that never answers
		return hotlimit.Decision{Limit: 1, RetryAfter: time.Second}, ctx.Err()
	}}
	go func() {
		<-asked
		cancel()
	}()
	assert.ErrorIs(t, hotlimit.Wait(ctx, hung, "k"), context.Canceled)

	failOpen := &backend{t: t, take: func(context.Context, int) (hotlimit.Decision, error) {
		return hotlimit.Decision{Allowed: true, Limit: 1}, errBackendDown
	}}
	assert.NoError(t, hotlimit.Wait(context.Background(), failOpen, "k"), "the failure policy let it pass")
}

// TestWaitKeepsTheBackendsError: when the denials are a failure policy's
// and the deadline comes first, the error says so: it wraps both
// context.DeadlineExceeded and the backend's error.
func TestWaitKeepsTheBackendsError(t *testing.T) {
	calls := 0
	failClosed := &backend{t: t, take: func(context.Context, int) (hotlimit.Decision, error) {
		calls++
		return hotlimit.Decision{Limit: 1, RetryAfter: time.Hour}, errBackendDown
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := hotlimit.Wait(ctx, failClosed, "k")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, errBackendDown)
	assert.Equal(t, 1, calls)

	denied := &backend{t: t, take: func(context.Context, int) (hotlimit.Decision, error) {
		return hotlimit.Decision{Limit: 1, RetryAfter: time.Hour}, nil
	}}
	err = hotlimit.Wait(ctx, denied, "k")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, errBackendDown)
}

// TestWaitNeverPastTheClockRange: a sliding log on a clock past the latest
// time it logs (2^61 − 2 ns after New read the clock) keeps its requests in
// the window for good, so a wait for one more fails at once, without
// sleeping, and the error does not blame the request's size, which is
// within the limit.
func TestWaitNeverPastTheClockRange(t *testing.T) {
	f := new(fakeTime) // reads 0 at New
	lim, err := slidinglog.New(2, time.Second, hotlimit.WithClock(f.now.Load))
	require.NoError(t, err)
	f.now.Store(math.MaxInt64)
	require.True(t, lim.Take("k", 2).Allowed)
	err = hotlimit.Wait(context.Background(), lim, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.EqualError(t, err, "hotlimit: 1 requests never pass, though within the burst: the limiter's clock stops before they would, or a composite's child that tells no burst passes fewer at once: the request can never pass")
	assert.Empty(t, f.slept)
}

// TestWaitNeverPastTheLastReading: a token bucket that refills, or a fixed
// window that ends, only after math.MaxInt64, the last reading a clock
// makes, never lets the request pass: a wait fails at once, without
// sleeping, and says why, where it used to sleep a wait no clock reaches.
func TestWaitNeverPastTheLastReading(t *testing.T) {
	const want = "hotlimit: 1 requests never pass, though within the burst: the limiter's clock stops before they would, or a composite's child that tells no burst passes fewer at once: the request can never pass"
	f := new(fakeTime)
	f.now.Store(math.MaxInt64 - int64(time.Millisecond))
	bucket := newBucket(t, 1, time.Second, f)
	require.True(t, bucket.Allow("k"))
	err := hotlimit.Wait(context.Background(), bucket, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.EqualError(t, err, want)
	assert.Empty(t, f.slept)

	window, err := fixedwindow.New(1, time.Second, hotlimit.WithClock(f.now.Load))
	require.NoError(t, err)
	require.True(t, window.Allow("k"))
	err = hotlimit.Wait(context.Background(), window, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.EqualError(t, err, want)
	assert.Empty(t, f.slept)
}

// TestWaitDeadlineJustBeforeRetryAfter: a deadline that comes only a little
// before RetryAfter still fails the wait at once, without sleeping into the
// deadline; one a little after it lets the wait sleep and pass.
func TestWaitDeadlineJustBeforeRetryAfter(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 1, time.Hour, f)
	require.True(t, lim.Allow("k"))
	short, cancel := context.WithTimeout(context.Background(), 59*time.Minute)
	defer cancel()
	err := hotlimit.Wait(short, lim, "k", hotlimit.WithSleep(f.sleep))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, f.slept, "no sleep towards a deadline before RetryAfter")

	long, cancel := context.WithTimeout(context.Background(), 61*time.Minute)
	defer cancel()
	require.NoError(t, hotlimit.Wait(long, lim, "k", hotlimit.WithSleep(f.sleep)))
	assert.Equal(t, []time.Duration{time.Hour}, f.slept)
}

// TestWaitSleepNilKeepsTheSleepBefore: WithSleep(nil) keeps the sleep given
// before it, as it keeps the default timer when none was: the wait sleeps
// on the fake clock, taking no real time.
func TestWaitSleepNilKeepsTheSleepBefore(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 1, time.Hour, f)
	require.True(t, lim.Allow("k"))
	require.NoError(t, hotlimit.Wait(context.Background(), lim, "k", hotlimit.WithSleep(f.sleep), hotlimit.WithSleep(nil)))
	assert.Equal(t, []time.Duration{time.Hour}, f.slept)
}

// TestWaitNeverFromALimiterWithoutABurst: a limiter that tells no burst (no
// Burster) and answers Never is taken at its word that the request is more
// than ever passes at once: the error quotes its limit, and does not say the
// request is within a burst it does not know.
func TestWaitNeverFromALimiterWithoutABurst(t *testing.T) {
	s := &scripted{script: []hotlimit.Decision{{Limit: 3, RetryAfter: hotlimit.Never}}}
	err := hotlimit.WaitN(context.Background(), s, "k", 2)
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.EqualError(t, err, "hotlimit: 2 requests at once, more than ever pass at once (the burst, or the limit 3 without one): the request can never pass")
	assert.Equal(t, 1, s.calls)
}

// TestWaitThatPassesAtOnceAllocatesNothing: a pacer that calls Wait before
// each request it sends, on a limiter that admits it, pays no allocation;
// WaitN's options were held where the options' functions made them escape.
func TestWaitThatPassesAtOnceAllocatesNothing(t *testing.T) {
	l, err := tokenbucket.New(1<<20, time.Millisecond)
	require.NoError(t, err)
	ctx := context.Background()
	var failed atomic.Int64
	allocs := testing.AllocsPerRun(1000, func() {
		if hotlimit.Wait(ctx, l, "merchant-7") != nil {
			failed.Add(1)
		}
	})
	assert.Zero(t, allocs)
	assert.Zero(t, failed.Load(), "every Wait passed at once")
}

// noBurster is a Refunder that tells no burst: a composite's Burst is then
// a bound, the least of its other children's (see hotlimit.Burster).
type noBurster struct{ l *tokenbucket.Limiter }

func (b noBurster) Allow(key string) bool                    { return b.l.Allow(key) }
func (b noBurster) Take(key string, n int) hotlimit.Decision { return b.l.Take(key, n) }
func (b noBurster) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return b.l.TakeReceipt(key, n)
}
func (b noBurster) Refund(key string, r hotlimit.Receipt) { b.l.Refund(key, r) }

// TestWaitNeverThroughAChildWithoutABurst: a composite of a child that
// tells no burst and passes 3 at once, and one of burst 10, tells a burst
// of 10, a bound; 5 requests never pass, by the first child's burst, on a
// clock far from its end, and the error does not blame the clock alone.
func TestWaitNeverThroughAChildWithoutABurst(t *testing.T) {
	three, err := tokenbucket.New(3, time.Second)
	require.NoError(t, err)
	ten, err := tokenbucket.New(10, time.Second)
	require.NoError(t, err)
	for _, children := range [][]hotlimit.Limiter{{noBurster{three}, ten}, {noBurster{three}}} {
		c, err := composite.New(children...)
		require.NoError(t, err)
		require.GreaterOrEqual(t, c.Burst(), 5, "a bound above what passes")
		err = hotlimit.WaitN(context.Background(), c, "k", 5)
		assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
		assert.Contains(t, err.Error(), "or a composite's child that tells no burst passes fewer at once", "%d children", len(children))
	}
}

// TestWaitOptionsInOrder: Wait's options apply in order, a nil one skipped
// without stopping those after it, and of two sleeps the last wins: the
// wait sleeps on the fake clock, not with the first sleep (which fails)
// nor with the timer (which would never see the fake clock move, and is
// cut short by the context's second).
func TestWaitOptionsInOrder(t *testing.T) {
	f := new(fakeTime)
	lim := newBucket(t, 1, time.Millisecond, f)
	require.True(t, lim.Allow("k"))
	first := func(context.Context, time.Duration) error { return errors.New("the first sleep") }
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, hotlimit.Wait(ctx, lim, "k", nil, hotlimit.WithSleep(first), nil, hotlimit.WithSleep(f.sleep)))
	assert.Equal(t, []time.Duration{time.Millisecond}, f.slept)
}
