package composite_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// childModel is the sequential model of one limiter of this module
// (internal/models), for the composite's model.
type childModel interface {
	Take(key string, n int, now int64) hotlimit.Decision
	Refund(key string, r hotlimit.Receipt, now int64)
}

// modelKind is a kind of limiter with its model. tol is how early the
// limiter's durations may be against the exact model: the token bucket
// counts in fixed point, and its waits may be a few units of time early
// (microseconds at these rates; package tokenbucket pins them), the others
// are exact on the clocks these tests use.
type modelKind struct {
	name string
	tol  time.Duration
	make func(t testing.TB, limit, burst int, window time.Duration, clock hotlimit.Clock) (hotlimit.Refunder, childModel)
}

var modelKinds = []modelKind{
	{"tokenbucket", 100 * time.Microsecond, func(t testing.TB, limit, burst int, window time.Duration, clock hotlimit.Clock) (hotlimit.Refunder, childModel) {
		l, err := tokenbucket.New(limit, window, hotlimit.WithClock(clock), hotlimit.WithBurst(burst))
		require.NoError(t, err)
		return l, models.NewTokenBucket(limit, burst, window, clock())
	}},
	{"gcra", 0, func(t testing.TB, limit, burst int, window time.Duration, clock hotlimit.Clock) (hotlimit.Refunder, childModel) {
		l, err := gcra.New(limit, window, hotlimit.WithClock(clock), hotlimit.WithBurst(burst))
		require.NoError(t, err)
		return l, models.NewGCRA(limit, burst, window, clock()) // whole ticks per ns at these rates: exact
	}},
	{"fixedwindow", 0, func(t testing.TB, limit, _ int, window time.Duration, clock hotlimit.Clock) (hotlimit.Refunder, childModel) {
		return kinds[2].make(t, limit, window, clock), models.NewFixedWindow(limit, window)
	}},
	{"slidingcounter", 0, func(t testing.TB, limit, _ int, window time.Duration, clock hotlimit.Clock) (hotlimit.Refunder, childModel) {
		return kinds[3].make(t, limit, window, clock), models.NewSlidingCounter(limit, window)
	}},
	{"slidinglog", 0, func(t testing.TB, limit, _ int, window time.Duration, clock hotlimit.Clock) (hotlimit.Refunder, childModel) {
		return kinds[4].make(t, limit, window, clock), models.NewSlidingLog(limit, window)
	}},
}

// modelChild is one child of a composite's model.
type modelChild struct {
	kind  modelKind
	m     childModel
	burst int
}

// question is the child's wait for n requests of key at now, its model
// left as it was: its RetryAfter when it denies them, else 0 (a sliding log
// is asked on a copy; the others take and give back at once, which restores
// them exactly).
func (c modelChild) question(key string, n int, now int64) time.Duration {
	if sl, ok := c.m.(*models.SlidingLog); ok {
		return sl.Clone().Take(key, n, now).RetryAfter
	}
	d := c.m.Take(key, n, now)
	if d.Allowed {
		c.m.Refund(key, hotlimit.Receipt{N: n, At: now}, now)
		return 0
	}
	return d.RetryAfter
}

// band is a duration the limiter must give: the model's want, or up to
// tol earlier.
type band struct {
	lo, want time.Duration
	later    bool // a child after the denier waits longer than it
}

func (b *band) add(want, tol time.Duration) {
	b.lo, b.want = max(b.lo, want-min(want, tol)), max(b.want, want)
}

// sequentialTake is the sequential model of a composite of children (in
// order) answering Take(key, n) at now, with the bands its RetryAfter and
// ResetAfter must fall in: all of n pass every child or none is counted;
// Limit and Remaining are the least Remaining's (the first on a tie), the
// denier's own decision in its place, the others reporting after the
// give-back; ResetAfter the largest. A denial's RetryAfter is the least
// wait after which every child admits n: the largest of the denier's and of
// each later child's own wait for n, or Never when n is above some child's
// burst. n < 1 reports.
// most is the least burst of the children.
func sequentialTake(children []modelChild, most int, key string, n int, now int64) (hotlimit.Decision, band, band) {
	var d hotlimit.Decision
	var retry, reset band
	merge := func(i int, cd hotlimit.Decision) {
		if i == 0 || cd.Remaining < d.Remaining {
			d.Limit, d.Remaining = cd.Limit, cd.Remaining
		}
		reset.add(cd.ResetAfter, children[i].kind.tol)
	}
	if n < 1 || n > most {
		d.Allowed = true
		q := n
		if n > most {
			q = 0
		}
		for i, c := range children {
			cd := c.m.Take(key, q, now)
			merge(i, cd)
			d.Allowed = d.Allowed && cd.Allowed
			if cd.RetryAfter == hotlimit.Never {
				retry.add(hotlimit.Never, 0)
			} else {
				retry.add(cd.RetryAfter, c.kind.tol)
			}
		}
		if n > most {
			d.Allowed = false
			retry = band{lo: hotlimit.Never, want: hotlimit.Never}
		}
		d.RetryAfter = retry.want
		return d, retry, reset
	}
	denier, own := -1, hotlimit.Decision{}
	for i, c := range children {
		own = c.m.Take(key, n, now)
		if !own.Allowed {
			denier = i
			break
		}
		merge(i, own)
	}
	if denier < 0 {
		d.Allowed = true
		return d, retry, reset
	}
	for j := denier - 1; j >= 0; j-- {
		children[j].m.Refund(key, hotlimit.Receipt{N: n, At: now}, now)
	}
	reset = band{}
	retry.add(own.RetryAfter, children[denier].kind.tol)
	for i, c := range children {
		switch {
		case i == denier:
			merge(i, own)
			continue
		case i > denier:
			w := c.question(key, n, now)
			retry.later = retry.later || w > own.RetryAfter
			retry.add(w, c.kind.tol)
		}
		merge(i, c.m.Take(key, 0, now))
	}
	d.RetryAfter = retry.want
	return d, retry, reset
}

// TestRetryAfterWaitsForEveryChild: under 1 per second and 1 per minute,
// the second request, half a second after the first, is denied by the
// second's limit, and the minute's denies it too until the minute is out:
// RetryAfter is the minute's wait (59.5 s for a window), as the sequential
// model of each child says, not the second's 0.5 s, after which a retry
// was denied again. The request passes exactly RetryAfter later, and is
// denied 1 ns sooner, whatever the kinds of the two children.
func TestRetryAfterWaitsForEveryChild(t *testing.T) {
	for _, sk := range modelKinds {
		for _, mk := range modelKinds {
			t.Run(sk.name+"+"+mk.name, func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(1000 * time.Hour)) // on every window's boundary
				second, sm := sk.make(t, 1, 1, time.Second, now.Load)
				minute, mm := mk.make(t, 1, 1, time.Minute, now.Load)
				c, err := composite.New(second, minute)
				require.NoError(t, err)
				children := []modelChild{{sk, sm, 1}, {mk, mm, 1}}

				start := now.Load()
				want, _, _ := sequentialTake(children, 1, "k", 1, start)
				require.True(t, want.Allowed)
				require.True(t, c.Allow("k"))
				now.Add(int64(500 * time.Millisecond))
				want, retry, _ := sequentialTake(children, 1, "k", 1, now.Load())
				require.False(t, want.Allowed)
				d := c.Take("k", 1)
				require.False(t, d.Allowed)
				assert.Greater(t, d.RetryAfter, 59*time.Second, "the minute's wait")
				assert.GreaterOrEqual(t, d.RetryAfter, retry.lo, "the model's wait: %v", retry.want)
				assert.LessOrEqual(t, d.RetryAfter, retry.want)

				// The minute is asked for the request on every denial:
				// still allocation-free.
				assert.Zero(t, testing.AllocsPerRun(20, func() { c.Take("k", 1) }), "a denial that asks the minute")

				limitertest.PassesAtRetryAfter(t, &now, d, func() hotlimit.Decision { return c.Take("k", 1) })
			})
		}
	}
}

// exactConfigs are the policies of the differential test: rates whose
// token bucket is exact on a clock of whole milliseconds, and whose GCRA
// counts whole ticks per nanosecond (see packages tokenbucket and gcra).
var exactWindows = []time.Duration{250 * time.Millisecond, time.Second, time.Minute}

// TestCompositeAgreesWithSequentialModels plays random sequences on random
// composites of 2 to 4 children of random kinds, limits, bursts and windows,
// under a clock stepped by whole milliseconds: Take(key, n) for n from -1
// to above the least burst. Every Decision must be the sequential model's,
// built from each child's model (see sequentialTake): in particular a
// denial's RetryAfter is the least wait after which every child admits the
// request, not only the denier's.
func TestCompositeAgreesWithSequentialModels(t *testing.T) {
	seqs, steps := 300, 80
	if testing.Short() {
		seqs = 60
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 11))
	var denied, laterWaited int
	for seq := range seqs {
		var now atomic.Int64
		now.Store(int64(1000 * time.Hour))
		var children []modelChild
		var limiters []hotlimit.Limiter
		most := math.MaxInt
		for range 2 + r.IntN(3) {
			k := modelKinds[r.IntN(len(modelKinds))]
			limit := 1 + r.IntN(5)
			burst := limit
			if k.name == "tokenbucket" || k.name == "gcra" {
				burst = 1 + r.IntN(limit+2)
			}
			l, m := k.make(t, limit, burst, exactWindows[r.IntN(len(exactWindows))], now.Load)
			children = append(children, modelChild{k, m, burst})
			limiters = append(limiters, l)
			most = min(most, burst)
		}
		c, err := composite.New(limiters...)
		require.NoError(t, err)
		for step := range steps {
			if r.IntN(3) > 0 {
				now.Add(r.Int64N(int64(2*time.Second)) / int64(time.Millisecond) * int64(time.Millisecond))
			}
			if r.IntN(20) == 0 {
				now.Add(int64(time.Minute))
			}
			key := []string{"a", "b"}[r.IntN(2)]
			n := r.IntN(most+3) - 1
			want, retry, reset := sequentialTake(children, most, key, n, now.Load())
			d := c.Take(key, n)
			at := fmt.Sprintf("seq %d step %d: Take(%q, %d) = %+v, model %+v", seq, step, key, n, d, want)
			require.Equal(t, want.Allowed, d.Allowed, at)
			assert.Equal(t, want.Limit, d.Limit, "%s: Limit", at)
			assert.Equal(t, want.Remaining, d.Remaining, "%s: Remaining", at)
			assert.GreaterOrEqual(t, d.RetryAfter, retry.lo, "%s: RetryAfter", at)
			assert.LessOrEqual(t, d.RetryAfter, retry.want, "%s: RetryAfter", at)
			assert.GreaterOrEqual(t, d.ResetAfter, reset.lo, "%s: ResetAfter", at)
			assert.LessOrEqual(t, d.ResetAfter, reset.want, "%s: ResetAfter", at)
			if !d.Allowed && n >= 1 && d.RetryAfter != hotlimit.Never {
				denied++
				if retry.later {
					laterWaited++
				}
			}
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%d denials waiting, %d waiting for a later child", denied, laterWaited)
	require.Positive(t, denied)
	require.Positive(t, laterWaited)
}

// TestRetryAfterLaterChildRefilledSinceItsReport forces the race between a
// later child's report and the question of its wait: under 1 per second and
// 1 per minute, the minute's bucket reports itself empty after the second's
// denial, then the clock moves a minute on before it is asked for the
// request. It admits it, is given it back at once, and waits nothing: the
// RetryAfter is the second's, and the bucket is exactly as a twin that
// never saw the question (full again).
func TestRetryAfterLaterChildRefilledSinceItsReport(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(1000 * time.Hour))
	second := kinds[2].make(t, 1, time.Second, now.Load)
	bucket := modelKinds[0].make
	minute, _ := bucket(t, 1, 1, time.Minute, now.Load)
	twin, _ := bucket(t, 1, 1, time.Minute, now.Load)
	later := &limitertest.AfterReport{Refunder: minute}
	c, err := composite.New(second, later)
	require.NoError(t, err)
	require.True(t, c.Allow("k"))
	require.True(t, twin.Allow("k"))
	require.Equal(t, 1, later.Admitted)
	later.Admitted = 0

	now.Add(int64(500 * time.Millisecond))
	later.Hook = func() { now.Add(int64(time.Minute)) }
	d := c.Take("k", 1)
	require.Nil(t, later.Hook, "the minute reported its state")
	assert.False(t, d.Allowed)
	assert.Equal(t, 500*time.Millisecond, d.RetryAfter, "the second's wait: the minute admits the request now")
	assert.Equal(t, 0, d.Remaining, "as reported")
	assert.Equal(t, 1, later.Admitted, "the minute was asked for the request, and admitted it")
	assert.Equal(t, 1, later.Refunds, "and was given it back")
	assert.Equal(t, twin.Take("k", 0), minute.Take("k", 0), "the minute as it would be without the question")
	assert.Equal(t, 1, minute.Take("k", 0).Remaining)
}

// TestRetryAfterAsksLaterChildrenUnderTheContext: after a denial, a later
// child that takes a context and reports itself spent is asked for the
// request under the caller's context, and its wait counts; one whose report
// failed (its backend down) is not asked again, and its failure stays
// beside the decision.
func TestRetryAfterAsksLaterChildrenUnderTheContext(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	later := newRemote(t, 1)
	require.True(t, later.Allow("k"))
	later.takes = nil
	c, err := composite.New(spent(t), later)
	require.NoError(t, err)
	d, err := c.TakeContext(ctx, "k", 1)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	require.Len(t, later.takes, 2, "its report, then the question")
	assert.Same(t, ctx, later.takes[1], "the question is asked under the caller's context")
	assert.Empty(t, later.refunds, "it denied: nothing to give back")
	assert.Equal(t, time.Minute-1, d.RetryAfter, "both are spent until the minute ends")

	failing := newRemote(t, 1)
	failing.fail = true
	c, err = composite.New(spent(t), failing)
	require.NoError(t, err)
	d, err = c.TakeContext(ctx, "k", 1)
	assert.False(t, d.Allowed)
	assert.Len(t, failing.takes, 1, "its report alone: it failed, and is not asked again")
	require.ErrorIs(t, err, errBackend)
	assert.NoError(t, composite.DecidingError(err), "the denier decided")
}

// TestRetryAfterQuestionGivesBackOnEveryPath forces a later child to admit
// the question of its wait (its bucket refills between its report and the
// question) when it is asked with a context, and when it sits in a nested
// composite: each way, it is given the request back at once, and is left as
// a twin that never saw the question.
func TestRetryAfterQuestionGivesBackOnEveryPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  context.Context
		wrap func(t *testing.T, a *limitertest.AfterReport) hotlimit.Limiter
	}{
		{"with a context", context.Background(), func(_ *testing.T, a *limitertest.AfterReport) hotlimit.Limiter {
			return limitertest.ContextAfterReport{AfterReport: a}
		}},
		{"nested", nil, func(t *testing.T, a *limitertest.AfterReport) hotlimit.Limiter {
			sub, err := composite.New(a)
			require.NoError(t, err)
			return sub
		}},
		{"nested with a context", context.Background(), func(t *testing.T, a *limitertest.AfterReport) hotlimit.Limiter {
			sub, err := composite.New(limitertest.ContextAfterReport{AfterReport: a})
			require.NoError(t, err)
			return sub
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(1000 * time.Hour))
			second := kinds[2].make(t, 1, time.Second, now.Load)
			bucket := modelKinds[0].make
			minute, _ := bucket(t, 1, 1, time.Minute, now.Load)
			twin, _ := bucket(t, 1, 1, time.Minute, now.Load)
			later := &limitertest.AfterReport{Refunder: minute}
			c, err := composite.New(second, tc.wrap(t, later))
			require.NoError(t, err)
			require.True(t, c.Allow("k"))
			require.True(t, twin.Allow("k"))
			later.Admitted = 0

			now.Add(int64(500 * time.Millisecond))
			later.Hook = func() { now.Add(int64(time.Minute)) }
			var d hotlimit.Decision
			if tc.ctx != nil {
				d, err = c.TakeContext(tc.ctx, "k", 1)
				require.NoError(t, err)
			} else {
				d = c.Take("k", 1)
			}
			require.Nil(t, later.Hook, "the minute reported its state")
			assert.False(t, d.Allowed)
			assert.Equal(t, 500*time.Millisecond, d.RetryAfter, "the second's wait")
			assert.Equal(t, 1, later.Admitted, "the minute was asked for the request, and admitted it")
			assert.Equal(t, 1, later.Refunds, "and was given it back")
			assert.Equal(t, twin.Take("k", 0), minute.Take("k", 0), "the minute as it would be without the question")
		})
	}
}

// TestRetryAfterDoesNotAskAFailingChildAgainWithoutAContext: a denial by
// Take, which has no context, still knows a later child's report failed,
// and does not ask it again for its wait: that would only be one more
// failed round trip (and one more failure its policy counts), for no wait.
func TestRetryAfterDoesNotAskAFailingChildAgainWithoutAContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(c *composite.Limiter) hotlimit.Decision
	}{
		{"Take", func(c *composite.Limiter) hotlimit.Decision { return c.Take("k", 1) }},
		{"TakeContext", func(c *composite.Limiter) hotlimit.Decision {
			d, _ := c.TakeContext(context.Background(), "k", 1)
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := &limitertest.DownOpen{Err: errBackend}
			c, err := composite.New(spent(t), down)
			require.NoError(t, err)
			d := tc.take(c)
			assert.False(t, d.Allowed)
			assert.Equal(t, time.Minute-1, d.RetryAfter, "the denier's wait")
			assert.Equal(t, 1, down.Asked, "its report alone")
		})
	}
}

// neverAgain is a child that denies every request with RetryAfter Never,
// saying no Burst: a Take cannot learn beforehand that it never admits.
type neverAgain struct{}

func (neverAgain) Allow(string) bool { return false }

func (n neverAgain) Take(key string, k int) hotlimit.Decision {
	d, _ := n.TakeReceipt(key, k)
	return d
}

func (neverAgain) TakeReceipt(_ string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n < 1 {
		return hotlimit.Decision{Allowed: true, Limit: 1}, hotlimit.Receipt{}
	}
	return hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never}, hotlimit.Receipt{}
}

func (neverAgain) Refund(string, hotlimit.Receipt) {}

// TestRetryAfterNeverAsksNoLaterChild: a denial whose wait is Never already
// asks no later child for the request: no wait of theirs could change it.
func TestRetryAfterNeverAsksNoLaterChild(t *testing.T) {
	later := newRemote(t, 1)
	require.True(t, later.Allow("k"))
	later.takes = nil
	c, err := composite.New(neverAgain{}, later)
	require.NoError(t, err)
	d, err := c.TakeContext(context.Background(), "k", 1)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Len(t, later.takes, 1, "its report alone")
}

// endedAsks is a spent child that takes a context, whose report ends the
// caller's context (its deadline passing meanwhile), and that counts the
// requests it is asked for under an ended one: a redislimit limiter does
// not send those, and its failure policy answers, FailLocal taking them
// from its local limiter with no receipt to give them back by.
type endedAsks struct {
	*remote
	cancel func()
	ended  int
}

func (e *endedAsks) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n >= 1 && ctxend.Err(ctx) != nil {
		e.ended++
	}
	d, r, err := e.remote.TakeReceiptContext(ctx, key, n)
	if n == 0 {
		e.cancel()
	}
	return d, r, err
}

// TestRetryAfterAsksNoChildUnderAnEndedContext: a later child is not asked
// for the request once the caller's context has ended after its report,
// or is past its deadline though its timer has not run yet: it could not
// tell its wait, only fail.
func TestRetryAfterAsksNoChildUnderAnEndedContext(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		cancel func()
	}{
		{"canceled after its report", canceled, cancel},
		{"past its deadline", limitertest.PastDeadline(context.Background()), func() {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			later := &endedAsks{remote: newRemote(t, 1), cancel: tc.cancel}
			require.True(t, later.Allow("k"))
			c, err := composite.New(spent(t), later)
			require.NoError(t, err)
			d, err := c.TakeContext(tc.ctx, "k", 1)
			assert.NoError(t, err, "the children decided; the later one was not asked")
			assert.False(t, d.Allowed)
			assert.Equal(t, time.Minute-1, d.RetryAfter, "the denier's wait")
			assert.Zero(t, later.ended, "not asked under the ended context")
		})
	}
}

// TestRetryAfterAsksAnInMemoryNestedCompositeUnderAnEndedContext: a nested
// composite whose children all decide in memory cannot fail under an ended
// context, so it is still asked for its wait: the request waits for it as
// it waits for the same children side by side, 59.5 s under 1 per second
// and 1 per minute, not the denier's 0.5 s after which the minute denies
// it again.
func TestRetryAfterAsksAnInMemoryNestedCompositeUnderAnEndedContext(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	perSecond, err := tokenbucket.New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	perMinute, err := gcra.New(1, time.Minute, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	wide, err := tokenbucket.New(100, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	inner, err := composite.New(perMinute, wide)
	require.NoError(t, err)
	c, err := composite.New(perSecond, inner)
	require.NoError(t, err)
	require.True(t, c.Allow("k"))
	now.Add(int64(500 * time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := c.TakeContext(ctx, "k", 1)
	require.NoError(t, err, "no child takes a context of its own")
	assert.False(t, d.Allowed)
	assert.Equal(t, 59500*time.Millisecond, d.RetryAfter, "the nested composite's wait")
	assert.Equal(t, c.Take("k", 1), d, "as without a context")
}

// TestRetryAfterAsksNoCompositeHoldingARemoteChildUnderAnEndedContext: a
// nested composite that holds a child taking a context, here two levels
// down beside an in-memory limiter, is not asked for the request once the
// caller's context has ended, as that child on its own is not: asking it
// would ask that child, which could only fail.
func TestRetryAfterAsksNoCompositeHoldingARemoteChildUnderAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	later := &endedAsks{remote: newRemote(t, 1), cancel: cancel}
	require.True(t, later.Allow("k"))
	wide, err := tokenbucket.New(100, time.Second, hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	inner, err := composite.New(later)
	require.NoError(t, err)
	mid, err := composite.New(wide, inner)
	require.NoError(t, err)
	c, err := composite.New(spent(t), mid)
	require.NoError(t, err)
	d, _ := c.TakeContext(ctx, "k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, time.Minute-1, d.RetryAfter, "the denier's wait")
	assert.Zero(t, later.ended, "not asked under the ended context")
	assert.Equal(t, 100, wide.Take("k", 0).Remaining, "nothing left taken")
}

// TestUsesContext: a limiter that takes a context decides with it, and so
// does a composite holding one at any depth; an in-memory limiter does
// not, nor does a composite of in-memory limiters only, at any depth.
func TestUsesContext(t *testing.T) {
	memory := func() hotlimit.Limiter { return spent(t) }
	of := func(children ...hotlimit.Limiter) hotlimit.Limiter {
		c, err := composite.New(children...)
		require.NoError(t, err)
		return c
	}
	assert.False(t, composite.UsesContext(memory()), "in memory")
	assert.True(t, composite.UsesContext(newRemote(t, 1)), "taking a context")
	assert.False(t, composite.UsesContext(of(memory(), of(memory(), of(memory())))), "composites of in-memory limiters")
	assert.True(t, composite.UsesContext(of(memory(), of(memory(), of(newRemote(t, 1))))), "a composite holding one that takes a context")
}

// TestUsesContextOfNilIsFalse: UsesContext reported false of a nil
// Limiter, but a nil *Limiter, a typed nil in the interface, made it
// panic, reading the children of no composite. Neither decides with a
// context.
func TestUsesContextOfNilIsFalse(t *testing.T) {
	assert.False(t, composite.UsesContext(nil))
	assert.NotPanics(t, func() {
		assert.False(t, composite.UsesContext((*composite.Limiter)(nil)))
	})
}
