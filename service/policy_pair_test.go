package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

var (
	// burstyBucket refills 10 a second and holds 20: its capacity is its
	// burst, so a share of it is counted out of 20.
	burstyBucket = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	// minuteWindow counts 100 a minute.
	minuteWindow = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
)

// pairModel is the rule {burstyBucket, minuteWindow} written out for a
// clock that moves in whole seconds from a minute boundary: each limit's own
// state, its own Remaining and ResetAfter, and the limit that decides.
type pairModel struct {
	tokens, count int // the bucket's tokens; the window's count
	last          int // second of the bucket's last refill
}

// limitState is one limit's own view after a request.
type limitState struct {
	remaining  int
	resetAfter time.Duration
}

// take asks the rule for one request at second sec and returns whether it
// passes, the limit that decides (0 the bucket, 1 the window) and each
// limit's own state after it.
func (m *pairModel) take(sec int) (allowed bool, decider int, own [2]limitState, retryAfter time.Duration) {
	m.tokens = min(20, m.tokens+10*(sec-m.last))
	m.last = sec
	switch {
	case m.tokens < 1: // the bucket is asked first and denies
		allowed, decider, retryAfter = false, 0, 100*time.Millisecond
	case m.count >= 100: // the window denies; the bucket's token is given back
		allowed, decider, retryAfter = false, 1, time.Duration(60-sec%60)*time.Second
	default:
		allowed = true
		m.tokens--
		m.count++
	}
	own[0] = limitState{m.tokens, time.Duration(20-m.tokens) * 100 * time.Millisecond}
	own[1] = limitState{100 - m.count, 0}
	if m.count > 0 {
		own[1].resetAfter = time.Duration(60-sec%60) * time.Second
	}
	if allowed {
		// The least share of its capacity left, the bucket on a tie:
		// window/100 < bucket/20.
		if own[1].remaining*20 < own[0].remaining*100 {
			decider = 1
		}
	}
	return allowed, decider, own, retryAfter
}

// pairScript is how many requests the client sends in each second: the
// bucket denies in second 2, the window's share falls below the bucket's
// from second 5, and the window denies from second 8.
var pairScript = []int{10, 10, 25, 10, 10, 10, 10, 10, 10, 10, 10, 10}

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
	limits := [2]hotlimit.Config{burstyBucket, minuteWindow}
	s, now := newMulti(t, tenPerSecond, service.Limits{burstyBucket, minuteWindow})
	start := now.Load()
	require.Zero(t, start%int64(time.Minute), "the model counts windows from a minute boundary")
	policy, rule, every := pairModel{tokens: 20}, pairModel{tokens: 20}, pairModel{tokens: 20}
	var buf [2]service.LimitDecision
	windowDecided, mixedBefore := 0, 0
	for sec, calls := range pairScript {
		now.Store(start + int64(sec)*int64(time.Second))
		for call := range calls {
			allowed, decider, own, retry := policy.take(sec)
			d, c := s.TakePolicy("u", "pay", 1)
			assert.Equal(t, limits[decider], c, "second %d call %d: the deciding limit", sec, call)
			assert.Equal(t, allowed, d.Allowed, "second %d call %d", sec, call)
			assert.Equal(t, retry, d.RetryAfter, "second %d call %d: the rule's RetryAfter", sec, call)
			assert.Equal(t, own[decider].remaining, d.Remaining, "second %d call %d: the deciding limit's own Remaining", sec, call)
			assert.Equal(t, own[decider].resetAfter, d.ResetAfter, "second %d call %d: the deciding limit's own ResetAfter", sec, call)
			if decider == 1 {
				windowDecided++
				if own[0].remaining < own[1].remaining {
					mixedBefore++ // the least Remaining was the bucket's
				}
			}

			// The same request from another user, through Take.
			allowed, _, own, retry = rule.take(sec)
			d = s.Take("v", "pay", 1)
			assert.Equal(t, allowed, d.Allowed, "second %d call %d: Take", sec, call)
			assert.Equal(t, retry, d.RetryAfter, "second %d call %d: Take", sec, call)
			assert.Equal(t, min(own[0].remaining, own[1].remaining), d.Remaining, "second %d call %d: Take's Remaining is what would pass", sec, call)
			assert.Equal(t, max(own[0].resetAfter, own[1].resetAfter), d.ResetAfter, "second %d call %d: Take's ResetAfter is until every limit is full", sec, call)

			// And from a third, through TakeEach: the rule's decision, and
			// each limit with its own, the deciding one first.
			allowed, decider, own, retry = every.take(sec)
			d, each, err := s.TakeEach(t.Context(), "w", "pay", 1, buf[:0])
			require.NoError(t, err)
			assert.Equal(t, allowed, d.Allowed, "second %d call %d: TakeEach", sec, call)
			assert.Equal(t, min(own[0].remaining, own[1].remaining), d.Remaining, "second %d call %d: TakeEach returns Take's Decision", sec, call)
			require.Len(t, each, 2, "second %d call %d", sec, call)
			for k, j := range [2]int{decider, 1 - decider} {
				assert.Equal(t, limits[j], each[k].Config, "second %d call %d: entry %d", sec, call, k)
				assert.Equal(t, hotlimit.Decision{Allowed: allowed, Limit: limits[j].Limit, Remaining: own[j].remaining,
					RetryAfter: retry, ResetAfter: own[j].resetAfter}, each[k].Decision, "second %d call %d: entry %d, its own", sec, call, k)
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
	shadow := minuteWindow
	shadow.Shadow = true
	for _, tc := range []struct {
		name string
		ls   service.Limits
		want []hotlimit.Config
	}{
		{"one", service.Limits{burstyBucket}, []hotlimit.Config{burstyBucket}},
		{"oneShadow", service.Limits{burstyBucket, shadow}, []hotlimit.Config{burstyBucket}},
		{"allShadow", service.Limits{func() hotlimit.Config { c := burstyBucket; c.Shadow = true; return c }(), shadow}, nil},
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
