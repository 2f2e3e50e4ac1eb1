package service_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

var (
	tenPerSecond      = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	hundredPerMinute  = hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 100, Window: time.Minute}
	hundredPerMinuteF = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
)

// newMulti returns a service whose default is the single limit def and whose
// API "pay" has the rule ls, with a frozen clock at a minute boundary.
func newMulti(t *testing.T, def hotlimit.Config, ls service.Limits) (*service.Service, *atomic.Int64) {
	t.Helper()
	clock, now := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{def}, APIs: map[string]service.Limits{"pay": ls}}, clock)
	require.NoError(t, err)
	return s, now
}

// TestSeveralLimitsNeverOverAdmit: "10/s AND 100/min" on one rule, with a
// clock moved one second at a time: 10 pass each second until the minute's
// 100 are used, then none until the first of them is a minute old. Denials of
// one limit are not counted by the other.
func TestSeveralLimitsNeverOverAdmit(t *testing.T) {
	for _, tc := range []struct {
		name string
		ls   service.Limits
	}{
		{"perSecondFirst", service.Limits{tenPerSecond, hundredPerMinute}},
		{"perMinuteFirst", service.Limits{hundredPerMinute, tenPerSecond}},
		{"fixedWindow", service.Limits{tenPerSecond, hundredPerMinuteF}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, now := newMulti(t, tenPerSecond, tc.ls)
			start := now.Load()
			total := 0
			for sec := range 70 {
				now.Store(start + int64(sec)*int64(time.Second))
				got := passes(s, "u", "pay", 25)
				total += got
				switch {
				case sec < 10:
					assert.Equal(t, 10, got, "second %d: the per-second limit binds", sec)
				case sec < 60:
					assert.Equal(t, 0, got, "second %d: the per-minute limit binds", sec)
				default:
					// The minute's first requests have aged out; the bucket
					// refilled meanwhile, so 10 pass again.
					assert.Equal(t, 10, got, "second %d", sec)
				}
			}
			assert.Equal(t, 100+10*10, total)
		})
	}
}

func TestSeveralLimitsFrozenHammer(t *testing.T) {
	perSecond := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Second}
	perMinute := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 7, Window: time.Minute}
	s, _ := newMulti(t, perSecond, service.Limits{perSecond, perMinute})
	var passed, passedOther atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if s.Allow("u", "pay") {
					passed.Add(1)
				}
				if s.Allow("u", "other") { // the per-second limit alone, shared limiter
					passedOther.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 7, passed.Load(), "the tighter limit binds, exactly")
	assert.EqualValues(t, 10, passedOther.Load(), "another pair under the shared per-second limiter")
}

func TestAddingALimitKeepsTheOthersState(t *testing.T) {
	// u@pay starts under the per-second limit alone, then gets a per-minute
	// limit added: the per-second limiter is the same shared one, keyed by
	// the same pair, so its tokens carry over.
	s, _ := newMulti(t, tenPerSecond, service.Limits{hundredPerMinuteF, hundredPerMinute})
	require.NoError(t, s.ConfigureAPI("pay", tenPerSecond))
	require.Equal(t, 4, passes(s, "u", "pay", 4))
	require.NoError(t, s.Replace(service.Rules{
		Default: service.Limits{tenPerSecond},
		APIs:    map[string]service.Limits{"pay": {tenPerSecond, hundredPerMinute}},
	}))
	assert.Equal(t, 6, passes(s, "u", "pay", 20), "4 of the 10 tokens were used before")
	assert.Equal(t, 10, passes(s, "v", "pay", 20), "another pair: fresh")
	assert.Equal(t, service.Limits{tenPerSecond, hundredPerMinute}, s.ResolveLimits("u", "pay"))
	assert.Equal(t, tenPerSecond, s.Resolve("u", "pay"), "Resolve gives the first limit")
	// The per-minute limiter counted only what passed both.
	require.NoError(t, s.ConfigureAPI("pay", hundredPerMinute))
	assert.Equal(t, 100-6, passes(s, "u", "pay", 200))
}

func TestSeveralLimitsTake(t *testing.T) {
	s, _ := newMulti(t, tenPerSecond, service.Limits{tenPerSecond, hundredPerMinute})
	d := s.Take("u", "pay", 4)
	assert.True(t, d.Allowed)
	assert.Equal(t, 6, d.Remaining, "the most restrictive: 6 of 10 per second left")
	d = s.Take("u", "pay", 7)
	assert.False(t, d.Allowed)
	assert.Positive(t, d.RetryAfter)
	assert.Equal(t, hotlimit.Never, s.Take("u", "pay", 11).RetryAfter)
	assert.False(t, s.Take("u", "pay", -1).Allowed)
	assert.Equal(t, 6, s.Take("u", "pay", 0).Remaining, "denials took nothing")
}

// TestSeveralLimitsAdmitOnlyWhatEachAdmits replays random traffic under a
// moving clock through rules of several limits, and feeds every admitted
// request to a lone limiter of each limit, on the same clock: each must admit
// all of them. Whatever the interleaving of denials and refunds, no limit of
// a rule is ever exceeded.
func TestSeveralLimitsAdmitOnlyWhatEachAdmits(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, ls := range []service.Limits{
		{tenPerSecond, hundredPerMinute},
		{hundredPerMinute, tenPerSecond},
		{{Algorithm: hotlimit.SlidingLog, Limit: 10, Window: time.Second}, {Algorithm: hotlimit.SlidingLog, Limit: 30, Window: ms(5000)}},
		{{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}, {Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second, Burst: 8}, {Algorithm: hotlimit.SlidingCounter, Limit: 30, Window: ms(10000)}},
		{{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: ms(100)}, {Algorithm: hotlimit.FixedWindow, Limit: 20, Window: time.Second}},
	} {
		t.Run(limitsName(ls), func(t *testing.T) {
			s, now := newMulti(t, tenPerSecond, ls)
			shadows := make([]hotlimit.Limiter, len(ls))
			for i, c := range ls {
				var err error
				shadows[i], err = service.NewLimiter(c, hotlimit.WithClock(now.Load))
				require.NoError(t, err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(ls))))
			admitted := 0
			for step := range 3000 {
				now.Add(int64(ms(rng.IntN(40))))
				user := []string{"u", "v"}[rng.IntN(2)]
				n := 1 + rng.IntN(2)
				if !s.Take(user, "pay", n).Allowed {
					continue
				}
				admitted += n
				for i, sh := range shadows {
					if !assert.True(t, sh.Take(user, n).Allowed, "step %d: %v alone denies what the rule admitted", step, ls[i]) {
						return
					}
				}
			}
			assert.Greater(t, admitted, 100, "the test exercised admissions")
		})
	}
}

// limitsName names a rule for a subtest.
func limitsName(ls service.Limits) string {
	name := ""
	for i, c := range ls {
		if i > 0 {
			name += "+"
		}
		name += c.Algorithm.String() + "_" + c.Window.String()
	}
	return name
}

func TestSeveralLimitsAllowDoesNotAllocate(t *testing.T) {
	s, _ := newMulti(t, tenPerSecond, service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Second},
		{Algorithm: hotlimit.SlidingLog, Limit: 1000, Window: time.Second},
	})
	require.True(t, s.Allow("user", "pay"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("user", "pay") }))
}

// wrapped is a limiter as a factory may wrap one, to count its decisions
// say: it reports no Config, so only the rule's own Config tells that it
// is a sliding log. It counts the requests it is asked for and the refunds
// it is given.
type wrapped struct {
	hotlimit.Refunder
	takes, refunds atomic.Int32
}

func (w *wrapped) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n >= 1 {
		w.takes.Add(1)
	}
	return w.Refunder.TakeReceipt(key, n)
}

func (w *wrapped) Refund(key string, r hotlimit.Receipt) {
	w.refunds.Add(1)
	w.Refunder.Refund(key, r)
}

// TestSlidingLogOfAWrappingFactoryIsAskedLast: a rule asks its sliding logs
// last, since a sliding log's refund may hold capacity longer than the
// request it gives back would have. The order was chosen by the limiter's
// type alone, so a factory that wraps its limiters (for metrics, say) had
// its sliding log asked in the rule's order: first here, taking each
// request the fixed window behind it then denied, and refunded. It is
// chosen by the limit's Config too now, as the rule's other treatment of
// sliding logs (not asked for a wait of n > 1) already was: the fixed
// window denies first, and the log is neither asked nor refunded.
func TestSlidingLogOfAWrappingFactoryIsAskedLast(t *testing.T) {
	log := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 10, Window: time.Minute}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	var logs *wrapped
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		w := &wrapped{Refunder: l.(hotlimit.Refunder)}
		if c.Algorithm == hotlimit.SlidingLog {
			logs = w
		}
		return w, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{log, window}},
		hotlimit.WithClock(func() int64 { return int64(time.Hour) }), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.NotNil(t, logs)
	require.True(t, svc.Allow("u", "a"))
	for range 3 {
		assert.False(t, svc.Allow("u", "a"))
	}
	assert.EqualValues(t, 1, logs.takes.Load(), "the log counted the request that passed, and was asked for no other")
	assert.Zero(t, logs.refunds.Load(), "nor refunded")
}

// TestTakePolicyTieGoesToTheFirstLimitAsked: the docs gave a tie between
// limits of an equal share left to the first of the rule's order, but a
// rule asks its sliding logs last, and the tie goes to the first asked:
// under {10 per minute sliding log, 10 per minute fixed window}, written
// directly or by a factory that wraps its limiters, a fresh key's request
// names the fixed window.
func TestTakePolicyTieGoesToTheFirstLimitAsked(t *testing.T) {
	log := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 10, Window: time.Minute}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}
	wrapping := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		return &wrapped{Refunder: l.(hotlimit.Refunder)}, nil
	}
	for name, opts := range map[string][]hotlimit.Option{
		"factory=default":  nil,
		"factory=wrapping": {hotlimit.WithFactory(wrapping)},
	} {
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{log, window}},
			append(opts, hotlimit.WithClock(func() int64 { return int64(time.Hour) }))...)
		require.NoError(t, err, name)
		d, c := svc.TakePolicy("u", "a", 1)
		require.True(t, d.Allowed, name)
		assert.Equal(t, 9, d.Remaining, "%s: both hold 9 of 10", name)
		assert.Equal(t, window, c, "%s: the first asked, sliding logs last", name)
	}
}
