package service_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/service"
)

// limitModel is the sequential model of one limiter (internal/models).
type limitModel interface {
	Take(key string, n int, now int64) hotlimit.Decision
	Refund(key string, r hotlimit.Receipt, now int64)
}

// modelOf returns the model of c's in-memory limiter, built when the clock
// read epoch, and how early the limiter's durations may be against it: the
// token bucket counts in fixed point, its waits a few units of time early
// (microseconds at these rates; package tokenbucket pins them); the others
// are exact on the clocks these tests use (the GCRA counts whole ticks per
// nanosecond at these rates).
func modelOf(c hotlimit.Config, epoch int64) (limitModel, time.Duration) {
	burst := c.Capacity()
	switch c.Algorithm {
	case hotlimit.TokenBucket:
		return models.NewTokenBucket(c.Limit, burst, c.Window, epoch), 100 * time.Microsecond
	case hotlimit.GCRA:
		return models.NewGCRA(c.Limit, burst, c.Window, epoch), 0
	case hotlimit.FixedWindow:
		return models.NewFixedWindow(c.Limit, c.Window), 0
	case hotlimit.SlidingCounter:
		return models.NewSlidingCounter(c.Limit, c.Window), 0
	}
	return models.NewSlidingLog(c.Limit, c.Window), 0
}

// seqRule is the sequential model of a rule of several limits: each
// limit's model, in the order the rule asks them (sliding logs last), each
// under the key of its scope.
type seqRule struct {
	limits service.Limits
	models []limitModel
	tols   []time.Duration
	most   int
}

func newSeqRule(ls service.Limits, epoch int64) *seqRule {
	rm := &seqRule{most: math.MaxInt}
	rm.limits = slices.Clone(ls)
	slices.SortStableFunc(rm.limits, func(a, b hotlimit.Config) int {
		return b2i(a.Algorithm == hotlimit.SlidingLog) - b2i(b.Algorithm == hotlimit.SlidingLog)
	})
	for _, c := range rm.limits {
		m, tol := modelOf(c, epoch)
		rm.models, rm.tols = append(rm.models, m), append(rm.tols, tol)
		rm.most = min(rm.most, c.Capacity())
	}
	return rm
}

// durBand is a duration the service must give: want, or up to lo earlier.
type durBand struct {
	lo, want time.Duration
	later    bool // a limit after the denier waits longer than it
}

func (b *durBand) add(want, tol time.Duration) {
	b.lo, b.want = max(b.lo, want-min(want, tol)), max(b.want, want)
}

// take is the rule's answer to Take(user, api, n) at now, and the bands its
// RetryAfter and ResetAfter must fall in: every limit is asked for n in
// order; all pass and stay counted, or the first that denies denies the
// rule and those before it are given it back (each model refunds its
// receipt at now). Limit and Remaining are the least Remaining's (the
// first on a tie: the denier's own decision in its place, the others
// reporting after the give-back); ResetAfter the largest. A denial's
// RetryAfter is the least wait after which every limit admits n: the
// largest of the denier's and of each later limit's own wait for n (asked
// on a copy for a sliding log, which the rule asks without a Take; the
// others take and give back at once, which restores them exactly). n above
// some limit's capacity is asked of no limit: every limit reports, and
// RetryAfter is Never. n < 1 reports.
func (rm *seqRule) take(user, api string, n int, now int64) (hotlimit.Decision, durBand, durBand) {
	var d hotlimit.Decision
	var retry, reset durBand
	key := func(i int) string { return scopeKey(rm.limits[i].Scope, user, api) }
	merge := func(i int, cd hotlimit.Decision) {
		if i == 0 || cd.Remaining < d.Remaining {
			d.Limit, d.Remaining = cd.Limit, cd.Remaining
		}
		reset.add(cd.ResetAfter, rm.tols[i])
	}
	if n < 1 {
		d.Allowed = true
		for i, m := range rm.models {
			cd := m.Take(key(i), n, now)
			merge(i, cd)
			d.Allowed = d.Allowed && cd.Allowed
			retry.add(cd.RetryAfter, rm.tols[i])
		}
		d.RetryAfter = retry.want
		return d, retry, reset
	}
	if n > rm.most {
		// It can never pass: no limit is asked to take it, every limit
		// reports.
		for i, m := range rm.models {
			merge(i, m.Take(key(i), 0, now))
		}
		d.RetryAfter = hotlimit.Never
		return d, durBand{lo: hotlimit.Never, want: hotlimit.Never}, reset
	}
	denier, own := -1, hotlimit.Decision{}
	for i, m := range rm.models {
		own = m.Take(key(i), n, now)
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
		rm.models[j].Refund(key(j), hotlimit.Receipt{N: n, At: now}, now)
	}
	reset = durBand{}
	retry.add(own.RetryAfter, rm.tols[denier])
	for i, m := range rm.models {
		if i == denier {
			merge(i, own)
			continue
		}
		if i > denier {
			var w time.Duration
			if sl, ok := m.(*models.SlidingLog); ok {
				w = sl.Clone().Take(key(i), n, now).RetryAfter
			} else if q := m.Take(key(i), n, now); q.Allowed {
				m.Refund(key(i), hotlimit.Receipt{N: n, At: now}, now)
			} else {
				w = q.RetryAfter
			}
			retry.later = retry.later || w > own.RetryAfter
			retry.add(w, rm.tols[i])
		}
		merge(i, m.Take(key(i), 0, now))
	}
	d.RetryAfter = retry.want
	return d, retry, reset
}

// TestRetryAfterWaitsForEveryLimit: under a rule of 1 per second and 1 per
// minute, the second request, half a second after the first, is denied by
// the second's limit, and the minute's denies it too until the minute is
// out: RetryAfter is the minute's wait (59.5 s for a window), as the
// sequential model of each limit says, not the second's 0.5 s, after which
// a retry was denied again. The request passes exactly RetryAfter later,
// and is denied 1 ns sooner, whatever the algorithms of the two limits;
// TakeEach and TakePolicy give the same RetryAfter.
func TestRetryAfterWaitsForEveryLimit(t *testing.T) {
	algs := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog}
	for _, sa := range algs {
		for _, ma := range algs {
			t.Run(sa.String()+"+"+ma.String(), func(t *testing.T) {
				ls := service.Limits{{Algorithm: sa, Limit: 1, Window: time.Second}, {Algorithm: ma, Limit: 1, Window: time.Minute}}
				var now atomic.Int64
				now.Store(int64(1000 * time.Hour)) // on every window's boundary
				svc, err := service.NewFromRules(service.Rules{Default: ls}, hotlimit.WithClock(now.Load))
				require.NoError(t, err)
				rm := newSeqRule(ls, now.Load())

				want, _, _ := rm.take("u", "a", 1, now.Load())
				require.True(t, want.Allowed)
				require.True(t, svc.Allow("u", "a"))
				now.Add(int64(500 * time.Millisecond))
				want, retry, _ := rm.take("u", "a", 1, now.Load())
				require.False(t, want.Allowed)
				d := svc.Take("u", "a", 1)
				require.False(t, d.Allowed)
				assert.Greater(t, d.RetryAfter, 59*time.Second, "the minute's wait")
				assert.GreaterOrEqual(t, d.RetryAfter, retry.lo, "the model's wait: %v", retry.want)
				assert.LessOrEqual(t, d.RetryAfter, retry.want)
				pd, _ := svc.TakePolicy("u", "a", 1)
				assert.Equal(t, d.RetryAfter, pd.RetryAfter, "TakePolicy")
				var buf [2]service.LimitDecision
				ed, each, err := svc.TakeEach(context.Background(), "u", "a", 1, buf[:0])
				require.NoError(t, err)
				assert.Equal(t, d, ed, "TakeEach")
				for _, e := range each {
					assert.Equal(t, d.RetryAfter, e.Decision.RetryAfter, "TakeEach's %v carries the rule's RetryAfter", e.Config)
				}

				// The minute is asked for the request on every denial:
				// still allocation-free.
				assertDenialAllocatesNothing(t, func() { svc.Take("u", "a", 1) }, "a denial that asks the minute")
				limitertest.PassesAtRetryAfter(t, &now, d, func() hotlimit.Decision { return svc.Take("u", "a", 1) })
			})
		}
	}
}

// assertDenialAllocatesNothing asserts that deny, a denial, allocates
// nothing. Not under the race detector, whose sync.Pool drops a quarter of
// what is put back: the key buffers are then made anew.
func assertDenialAllocatesNothing(t *testing.T, deny func(), what string) {
	t.Helper()
	if !raceEnabled {
		assert.Zero(t, testing.AllocsPerRun(20, deny), what)
	}
}

// exactLimit returns a random limit whose in-memory limiter its model
// describes exactly on a clock of whole milliseconds (see modelOf).
func exactLimit(rng *rand.Rand) hotlimit.Config {
	algs := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog,
		hotlimit.GCRA, hotlimit.SlidingCounter}
	c := hotlimit.Config{Algorithm: algs[rng.IntN(len(algs))], Scope: hotlimit.Scope(rng.IntN(4)),
		Limit: 1 + rng.IntN(5), Window: []time.Duration{250 * time.Millisecond, time.Second, time.Minute}[rng.IntN(3)]}
	if c.Algorithm.HasBurst() && rng.IntN(2) == 0 {
		c.Burst = 1 + rng.IntN(c.Limit+2)
	}
	return c
}

// TestRuleAgreesWithSequentialModels plays random requests (n from -1 to
// above the least capacity, from two users to two apis) on random rules of
// 2 to 4 limits of random algorithms, limits, bursts, windows and scopes,
// under a clock stepped by whole milliseconds. Every Decision of Take must
// be the sequential model's, built from each limit's model (see
// seqRule.take): in particular a denial's RetryAfter is the least wait
// after which every limit admits the request, not only the denier's.
func TestRuleAgreesWithSequentialModels(t *testing.T) {
	rules, steps := 300, 80
	if testing.Short() {
		rules = 60
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	denied, laterWaited := 0, 0
	for r := 0; r < rules; r++ {
		var ls service.Limits
		for len(ls) < 2+rng.IntN(3) {
			c := exactLimit(rng)
			if !slices.ContainsFunc(ls, func(o hotlimit.Config) bool {
				return o.Algorithm == c.Algorithm && o.Limit == c.Limit && o.Window == c.Window && o.Scope == c.Scope
			}) {
				ls = append(ls, c)
			}
		}
		var now atomic.Int64
		now.Store(int64(1000 * time.Hour))
		svc, err := service.NewFromRules(service.Rules{Default: ls}, hotlimit.WithClock(now.Load))
		require.NoError(t, err, "rule %d: %v", r, ls)
		rm := newSeqRule(ls, now.Load())
		for step := range steps {
			if rng.IntN(3) > 0 {
				now.Add(rng.Int64N(int64(2*time.Second)) / int64(time.Millisecond) * int64(time.Millisecond))
			}
			if rng.IntN(20) == 0 {
				now.Add(int64(time.Minute))
			}
			user, api := []string{"u", "v"}[rng.IntN(2)], []string{"a", "b"}[rng.IntN(2)]
			n := rng.IntN(rm.most+3) - 1
			want, retry, reset := rm.take(user, api, n, now.Load())
			d := svc.Take(user, api, n)
			at := fmt.Sprintf("rule %d %v step %d: Take(%s, %s, %d) = %+v, model %+v", r, ls, step, user, api, n, d, want)
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
	t.Logf("%d denials waiting, %d waiting for a later limit", denied, laterWaited)
	require.Positive(t, denied)
	require.Positive(t, laterWaited)
}

// TestRetryAfterLaterLimitRefilledSinceItsReport forces the race between a
// later limit's report and the question of its wait: under a rule of 1 per
// second and 1 per minute, the minute's bucket reports itself empty after
// the second's denial, then the clock moves a minute on before it is asked
// for the request. It admits it, is given it back at once under the key it
// took it from, and waits nothing: the RetryAfter is the second's, and the
// bucket is exactly as a twin that never saw the question (full again).
func TestRetryAfterLaterLimitRefilledSinceItsReport(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(1000 * time.Hour))
	second := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	minute := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
	var later *limitertest.AfterReport
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil || c.Algorithm != hotlimit.TokenBucket {
			return l, err
		}
		later = &limitertest.AfterReport{Refunder: l.(hotlimit.Refunder)}
		return later, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{second, minute}},
		hotlimit.WithClock(now.Load), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.NotNil(t, later)
	unscoped := minute
	unscoped.Scope = hotlimit.PerPair
	twin, err := service.NewLimiter(unscoped, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, svc.Allow("u", "a"))
	require.True(t, twin.Allow("k"))
	require.Equal(t, 1, later.Admitted)
	later.Admitted = 0

	now.Add(int64(500 * time.Millisecond))
	later.Hook = func() { now.Add(int64(time.Minute)) }
	d := svc.Take("u", "a", 1)
	require.Nil(t, later.Hook, "the minute reported its state")
	assert.False(t, d.Allowed)
	assert.Equal(t, 500*time.Millisecond, d.RetryAfter, "the second's wait: the minute admits the request now")
	assert.Equal(t, 0, d.Remaining, "as reported")
	assert.Equal(t, 1, later.Admitted, "the minute was asked for the request, and admitted it")
	assert.Equal(t, 1, later.Refunds, "and was given it back")
	_, each, err := svc.TakeEach(context.Background(), "u", "b", 0, nil)
	require.NoError(t, err)
	require.Len(t, each, 2)
	for _, e := range each {
		if e.Config.Algorithm == hotlimit.TokenBucket {
			want := twin.Take("k", 0)
			assert.Equal(t, want.Remaining, e.Decision.Remaining, "the user's minute as it would be without the question")
			assert.Equal(t, want.ResetAfter, e.Decision.ResetAfter, "the user's minute as it would be without the question")
			assert.Equal(t, 1, e.Decision.Remaining)
		}
	}
}

// TestRetryAfterLaterLimitWithContextGivesBackTheQuestion is the race of
// TestRetryAfterLaterLimitRefilledSinceItsReport with a later limit that
// takes a context, asked under the caller's: it admits the question, is
// given the request back at once, and is left as a twin that never saw it.
func TestRetryAfterLaterLimitWithContextGivesBackTheQuestion(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(1000 * time.Hour))
	second := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	minute := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute}
	var later *limitertest.AfterReport
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil || c.Algorithm != hotlimit.TokenBucket {
			return l, err
		}
		later = &limitertest.AfterReport{Refunder: l.(hotlimit.Refunder)}
		return limitertest.ContextAfterReport{AfterReport: later}, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{second, minute}},
		hotlimit.WithClock(now.Load), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.NotNil(t, later)
	twin, err := service.NewLimiter(minute, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, svc.Allow("u", "a"))
	require.True(t, twin.Allow("k"))
	later.Admitted = 0

	now.Add(int64(500 * time.Millisecond))
	later.Hook = func() { now.Add(int64(time.Minute)) }
	d, err := svc.TakeContext(context.Background(), "u", "a", 1)
	require.NoError(t, err)
	require.Nil(t, later.Hook, "the minute reported its state")
	assert.False(t, d.Allowed)
	assert.Equal(t, 500*time.Millisecond, d.RetryAfter, "the second's wait: the minute admits the request now")
	assert.Equal(t, 1, later.Admitted, "the minute was asked for the request, and admitted it")
	assert.Equal(t, 1, later.Refunds, "and was given it back")
	_, each, err := svc.TakeEach(context.Background(), "u", "a", 0, nil)
	require.NoError(t, err)
	for _, e := range each {
		if e.Config.Algorithm == hotlimit.TokenBucket {
			assert.Equal(t, twin.Take("k", 0).Remaining, e.Decision.Remaining, "the minute as it would be without the question")
		}
	}
}

// TestRetryAfterDoesNotAskAFailingLimitAgainWithoutAContext: a denial by
// Take, which has no context, still knows a later limit's report failed,
// and does not ask it again for its wait: that would only be one more
// failed round trip (and one more failure its policy counts), for no wait.
func TestRetryAfterDoesNotAskAFailingLimitAgainWithoutAContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(svc *service.Service) hotlimit.Decision
	}{
		{"Take", func(svc *service.Service) hotlimit.Decision { return svc.Take("u", "a", 1) }},
		{"TakeContext", func(svc *service.Service) hotlimit.Decision {
			d, _ := svc.TakeContext(context.Background(), "u", "a", 1)
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := int64(1000 * time.Hour)
			second := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
			minute := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute}
			down := &limitertest.DownOpen{Err: errBackend}
			factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				if c.Algorithm == hotlimit.TokenBucket {
					return down, nil
				}
				return service.NewLimiter(c, opts...)
			}
			svc, err := service.NewFromRules(service.Rules{Default: service.Limits{second, minute}},
				hotlimit.WithClock(func() int64 { return now }), hotlimit.WithFactory(factory))
			require.NoError(t, err)
			require.True(t, svc.Allow("u", "a"))
			down.Asked = 0
			d := tc.take(svc)
			assert.False(t, d.Allowed)
			assert.Equal(t, time.Second, d.RetryAfter, "the second's wait")
			assert.Equal(t, 1, down.Asked, "its report alone")
		})
	}
}

// neverAgain is a limiter that denies every request with RetryAfter Never,
// saying no Burst: a Take cannot learn beforehand that it never admits.
// While *open, it admits every request instead.
type neverAgain struct{ open *bool }

func (n neverAgain) Allow(key string) bool { return n.Take(key, 1).Allowed }

func (n neverAgain) Take(key string, k int) hotlimit.Decision {
	d, _ := n.TakeReceipt(key, k)
	return d
}

func (a neverAgain) TakeReceipt(_ string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n < 1 || *a.open {
		return hotlimit.Decision{Allowed: true, Limit: 1}, hotlimit.Receipt{}
	}
	return hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never}, hotlimit.Receipt{}
}

func (neverAgain) Refund(string, hotlimit.Receipt) {}

// TestRetryAfterNeverAsksNoLaterLimit: a denial whose wait is Never already
// asks no later limit for the request: no wait of theirs could change it.
func TestRetryAfterNeverAsksNoLaterLimit(t *testing.T) {
	first := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	minute := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute}
	var later *asks
	open := true
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Algorithm == hotlimit.FixedWindow {
			return neverAgain{&open}, nil
		}
		l, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		later = &asks{Refunder: l.(hotlimit.Refunder)}
		return later, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{first, minute}}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.NotNil(t, later)
	require.True(t, svc.Allow("u", "a"), "the minute is spent")
	open = false
	later.takes = 0
	d := svc.Take("u", "a", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Zero(t, later.takes, "the minute was not asked for the request")
}

// asks is a limiter that counts the Takes of n ≥ 1 it is asked.
type asks struct {
	hotlimit.Refunder
	takes int
}

func (a *asks) Take(key string, n int) hotlimit.Decision {
	d, _ := a.TakeReceipt(key, n)
	return d
}

func (a *asks) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n >= 1 {
		a.takes++
	}
	return a.Refunder.TakeReceipt(key, n)
}

// endedAsks is a limiter that takes a context, whose report ends the
// caller's context (its deadline passing meanwhile), and that counts the
// requests it is asked for under an ended one: a redislimit limiter does
// not send those, and its failure policy answers, FailLocal taking them
// from its local limiter with no receipt to give them back by.
type endedAsks struct {
	hotlimit.Refunder
	cancel func()
	ended  int
}

func (e *endedAsks) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n >= 1 && ctxend.Err(ctx) != nil {
		e.ended++
	}
	d, r := e.TakeReceipt(key, n)
	if n == 0 {
		e.cancel()
	}
	return d, r, nil
}

func (e *endedAsks) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	e.Refund(key, r)
	return nil
}

// TestRetryAfterAsksNoLimitUnderAnEndedContext: a later limit is not asked
// for the request once the caller's context has ended after its report,
// or is past its deadline though its timer has not run yet: it could not
// tell its wait, only fail.
func TestRetryAfterAsksNoLimitUnderAnEndedContext(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	t.Run("canceled after its report", func(t *testing.T) { retryAfterAsksNoLimitUnder(t, canceled, cancel) })
	t.Run("past its deadline", func(t *testing.T) {
		retryAfterAsksNoLimitUnder(t, limitertest.PastDeadline(context.Background()), func() {})
	})
}

// retryAfterAsksNoLimitUnder is TestRetryAfterAsksNoLimitUnderAnEndedContext
// under ctx, which cancel, called at the later limit's report, ends.
func retryAfterAsksNoLimitUnder(t *testing.T, ctx context.Context, cancel func()) {
	now := int64(1000 * time.Hour)
	second := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	minute := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	var later *endedAsks
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil || c.Window != time.Minute {
			return l, err
		}
		later = &endedAsks{Refunder: l.(hotlimit.Refunder), cancel: func() {}}
		return later, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{second, minute}},
		hotlimit.WithClock(func() int64 { return now }), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.NotNil(t, later)
	require.True(t, svc.Allow("u", "a"))
	later.cancel = cancel
	d, err := svc.TakeContext(ctx, "u", "a", 1)
	assert.NoError(t, err, "the limits decided; the minute was not asked")
	assert.False(t, d.Allowed)
	assert.Equal(t, time.Second, d.RetryAfter, "the second's wait: the minute, not asked, is not counted")
	assert.Zero(t, later.ended, "not asked under the ended context")
}

// TestRetryAfterAsksAFactoryCompositeOfInMemoryLimitersUnderAnEndedContext:
// a factory may build a limit as a composite.Limiter of in-memory limiters,
// which takes a context but decides in memory and cannot fail. Under a
// context that has ended, such a limit was not asked for its wait, as if it
// were on Redis, and a request the per-second limit denied was told to
// retry in half a second, when the per-minute limit denies it for 59.5 s
// more: it is asked, and the wait is the one given without a context.
func TestRetryAfterAsksAFactoryCompositeOfInMemoryLimitersUnderAnEndedContext(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	second := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Second}
	minute := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute}
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		return composite.New(l)
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{second, minute}},
		hotlimit.WithClock(now.Load), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.True(t, svc.Allow("u", "a"))
	now.Add(int64(500 * time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := svc.TakeContext(ctx, "u", "a", 1)
	require.NoError(t, err, "no limit fails")
	assert.False(t, d.Allowed)
	assert.Equal(t, 59500*time.Millisecond, d.RetryAfter, "the minute's wait")
	assert.Equal(t, svc.Take("u", "a", 1), d, "as without a context")
}
