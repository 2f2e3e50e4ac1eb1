package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestSeveralLimitsTakePolicyPairsTheDecidingLimitWithItsOwnDecision drives
// a token bucket with a burst and a fixed window through TakePolicy. Before,
// the Decision paired with the deciding limit (the window, once its share
// falls below the bucket's) carried the bucket's Remaining, the least of
// the two: RateLimit fields built from them advertised the window's quota
// with the bucket's remaining count. Now the Decision TakePolicy returns
// with a limit is that limit's own: its Limit, Remaining and ResetAfter,
// with the rule's Allowed and RetryAfter. Take still returns the rule's
// Decision: what would still pass (the least Remaining) and when every
// limit is full again (the largest ResetAfter).
func TestSeveralLimitsTakePolicyPairsTheDecidingLimitWithItsOwnDecision(t *testing.T) {
	limits := [2]hotlimit.Config{limitertest.BurstyBucket, limitertest.MinuteWindow}
	s, now := newMulti(t, tenPerSecond, service.Limits{limitertest.BurstyBucket, limitertest.MinuteWindow})
	start := now.Load()
	require.Zero(t, start%int64(time.Minute), "the model counts windows from a minute boundary")
	policy, rule, every := limitertest.NewPairModel(), limitertest.NewPairModel(), limitertest.NewPairModel()
	var buf [2]service.LimitDecision
	windowDecided, mixedBefore := 0, 0
	for sec, calls := range limitertest.PairScript {
		now.Store(start + int64(sec)*int64(time.Second))
		for call := range calls {
			own := policy.Take(sec)
			allowed, decider, retry := own.Allowed, own.Decider, own.RetryAfter
			d, c := s.TakePolicy("u", "pay", 1)
			assert.Equal(t, limits[decider], c, "second %d call %d: the deciding limit", sec, call)
			assert.Equal(t, allowed, d.Allowed, "second %d call %d", sec, call)
			assert.Equal(t, retry, d.RetryAfter, "second %d call %d: the rule's RetryAfter", sec, call)
			assert.Equal(t, own.Remaining[decider], d.Remaining, "second %d call %d: the deciding limit's own Remaining", sec, call)
			assert.Equal(t, own.ResetAfter[decider], d.ResetAfter, "second %d call %d: the deciding limit's own ResetAfter", sec, call)
			if decider == 1 {
				windowDecided++
				if own.Remaining[0] < own.Remaining[1] {
					mixedBefore++ // the least Remaining was the bucket's
				}
			}

			// The same request from another user, through Take.
			own = rule.Take(sec)
			allowed, retry = own.Allowed, own.RetryAfter
			d = s.Take("v", "pay", 1)
			assert.Equal(t, allowed, d.Allowed, "second %d call %d: Take", sec, call)
			assert.Equal(t, retry, d.RetryAfter, "second %d call %d: Take", sec, call)
			assert.Equal(t, min(own.Remaining[0], own.Remaining[1]), d.Remaining, "second %d call %d: Take's Remaining is what would pass", sec, call)
			assert.Equal(t, max(own.ResetAfter[0], own.ResetAfter[1]), d.ResetAfter, "second %d call %d: Take's ResetAfter is until every limit is full", sec, call)

			// And from a third, through TakeEach: the rule's decision, and
			// each limit with its own, the deciding one first.
			own = every.Take(sec)
			allowed, decider, retry = own.Allowed, own.Decider, own.RetryAfter
			d, each, err := s.TakeEach(t.Context(), "w", "pay", 1, buf[:0])
			require.NoError(t, err)
			assert.Equal(t, allowed, d.Allowed, "second %d call %d: TakeEach", sec, call)
			assert.Equal(t, min(own.Remaining[0], own.Remaining[1]), d.Remaining, "second %d call %d: TakeEach returns Take's Decision", sec, call)
			require.Len(t, each, 2, "second %d call %d", sec, call)
			for k, j := range [2]int{decider, 1 - decider} {
				assert.Equal(t, limits[j], each[k].Config, "second %d call %d: entry %d", sec, call, k)
				assert.Equal(t, hotlimit.Decision{Allowed: allowed, Limit: limits[j].Limit, Remaining: own.Remaining[j],
					RetryAfter: retry, ResetAfter: own.ResetAfter[j]}, each[k].Decision, "second %d call %d: entry %d, its own", sec, call, k)
			}
		}
	}
	// The script reaches the cases the test is about.
	assert.Positive(t, windowDecided, "the window decides some requests")
	assert.Positive(t, mixedBefore, "some of them had the bucket's Remaining as the least")
}

// TestTakeEachLeavesShadowLimitsOut: a limit in shadow mode stays out of
// what TakeEach lists, as it stays out of the Decision, unless every limit
// of the rule is in shadow mode; a rule of one limit lists it alone.
func TestTakeEachLeavesShadowLimitsOut(t *testing.T) {
	shadow := limitertest.MinuteWindow
	shadow.Shadow = true
	for _, tc := range []struct {
		name string
		ls   service.Limits
		want []hotlimit.Config
	}{
		{"one", service.Limits{limitertest.BurstyBucket}, []hotlimit.Config{limitertest.BurstyBucket}},
		{"oneShadow", service.Limits{limitertest.BurstyBucket, shadow}, []hotlimit.Config{limitertest.BurstyBucket}},
		{"allShadow", service.Limits{func() hotlimit.Config { c := limitertest.BurstyBucket; c.Shadow = true; return c }(), shadow}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newMulti(t, tenPerSecond, tc.ls)
			d, each, err := s.TakeEach(t.Context(), "u", "pay", 1, nil)
			require.NoError(t, err)
			assert.True(t, d.Allowed)
			want := tc.want
			if want == nil {
				want = tc.ls // every limit is in shadow mode: all are listed
			}
			got := make([]hotlimit.Config, len(each))
			for i, ld := range each {
				got[i] = ld.Config
			}
			assert.ElementsMatch(t, want, got)
		})
	}
}

// TestTakeEachAllocatesNoMoreThanTakeContext: with room for the rule's
// limits in dst, listing them costs no allocation of its own.
func TestTakeEachAllocatesNoMoreThanTakeContext(t *testing.T) {
	lots := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Second}
	s, _ := newMulti(t, tenPerSecond, service.Limits{lots, {Algorithm: hotlimit.FixedWindow, Limit: 1 << 20, Window: time.Minute}})
	ctx := t.Context()
	var buf [2]service.LimitDecision
	_, _, err := s.TakeEach(ctx, "u", "pay", 1, buf[:0]) // the pair's keys are made
	require.NoError(t, err)
	base := testing.AllocsPerRun(100, func() { _, _ = s.TakeContext(ctx, "u", "pay", 1) })
	each := testing.AllocsPerRun(100, func() {
		_, got, _ := s.TakeEach(ctx, "u", "pay", 1, buf[:0])
		if len(got) != 2 {
			panic("TakeEach lists the rule's two limits")
		}
	})
	assert.LessOrEqual(t, each, base)
}

// TestTakePolicyDocExample is the example of Service.TakePolicy's
// documentation: a 10/s token bucket of burst 20 holding 10 and a 100/min
// window holding 40. The window holds the lesser share of its capacity
// (40/100 < 10/20), so TakePolicy names it with its own Remaining, 40, where
// Take returns the rule's, the least Remaining, 10.
func TestTakePolicyDocExample(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
	clock, now := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{bucket, window}}, clock)
	require.NoError(t, err)
	for i := range 3 { // 60 taken in 4 s: the window holds 40, the bucket 0
		require.True(t, s.Take("u", "a", 20).Allowed, "take %d", i)
		now.Add(int64(2 * time.Second))
	}
	now.Add(-int64(time.Second)) // the bucket refilled 10 since the last take
	d, policy := s.TakePolicy("u", "a", 0)
	assert.Equal(t, window, policy)
	assert.Equal(t, 40, d.Remaining)
	assert.Equal(t, 10, s.Take("u", "a", 0).Remaining)
}
