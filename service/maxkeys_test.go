package service_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestMaxKeysCapsEveryLimiter: hotlimit.WithMaxKeys given to the service caps
// each limiter it builds. A flood of new users, each using its pair once,
// never takes the keys held past the cap; while every pair held is in use,
// a new user is denied and the pairs held keep their counts exactly; once
// they are idle again, new users take their room.
func TestMaxKeysCapsEveryLimiter(t *testing.T) {
	const maxKeys = 100
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Second},
		hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(maxKeys))
	require.NoError(t, err)

	for i := range maxKeys {
		require.True(t, svc.Allow("user-"+strconv.Itoa(i), "GET /"), "user %d", i)
	}
	assert.Equal(t, maxKeys, svc.Len())
	d := svc.Take("newcomer", "GET /", 1)
	assert.False(t, d.Allowed, "no pair held is idle: the new pair is turned away")
	assert.Zero(t, d.Remaining)
	assert.Positive(t, d.RetryAfter)
	assert.Equal(t, maxKeys, svc.Len())
	for i := range maxKeys {
		d := svc.Take("user-"+strconv.Itoa(i), "GET /", 0)
		require.Equal(t, 2, d.Remaining, "user %d keeps its count", i)
	}

	now.Add(int64(time.Second)) // every bucket is full again: idle
	for i := range 10 * maxKeys {
		require.True(t, svc.Allow("flood-"+strconv.Itoa(i), "GET /"), "flood user %d", i)
		require.LessOrEqual(t, svc.Len(), maxKeys, "flood user %d", i)
		now.Add(int64(time.Second))
	}
}

// TestMaxKeysDenialGivesBackTheOtherLimits: in a rule of two limits, a new
// pair that the pair limit's key cap turns away is a denial like any other:
// the user's limit, which admitted it first, gets it back, so the user's
// quota counts exactly the requests that passed.
func TestMaxKeysDenialGivesBackTheOtherLimits(t *testing.T) {
	user := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Hour, Scope: hotlimit.PerUser}
	pair := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{user, pair}},
		hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(2))
	require.NoError(t, err)
	require.True(t, svc.Allow("u", "a1"))
	require.True(t, svc.Allow("u", "a2"))
	for i := range 3 {
		assert.False(t, svc.Allow("u", "a"+strconv.Itoa(3+i)), "pair %d: the cap is full of pairs in use", 3+i)
	}
	passed := 2
	for range 4 {
		for _, api := range []string{"a1", "a2"} {
			if svc.Allow("u", api) {
				passed++
			}
		}
	}
	assert.Equal(t, 5, passed, "the user's quota: the cap's denials took none of it")
}

// TestMaxKeysDenialIsObserved: for every in-memory algorithm, a new pair that
// the cap turns away gets the documented Decision: Allowed false, Remaining
// 0, RetryAfter the algorithm's longest recovery (the refill of
// a drained bucket, GCRA's burst of emission intervals, the end of the
// current window, the end of the next window, a window), and ResetAfter the
// same, the pair's quota being whole once it has room. The observer hears
// it as a denial with that Decision (from Allow, with Limit and Remaining
// only). With the pairs held drained, they are idle exactly RetryAfter later,
// if they get no other request: 1 ns before, the new pair is still turned
// away, and then it passes.
func TestMaxKeysDenialIsObserved(t *testing.T) {
	const into = 250 * time.Millisecond // the clock's offset into a window
	for _, tc := range []struct {
		alg   hotlimit.Algorithm
		retry time.Duration
	}{
		{hotlimit.TokenBucket, time.Second},
		{hotlimit.GCRA, time.Second},
		{hotlimit.FixedWindow, time.Second - into},
		{hotlimit.SlidingCounter, 2*time.Second - into},
		{hotlimit.SlidingLog, time.Second},
	} {
		t.Run(tc.alg.String(), func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour + into))
			var events []hotlimit.Event
			obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { events = append(events, e) })
			svc, err := service.New(hotlimit.Config{Algorithm: tc.alg, Limit: 3, Window: time.Second},
				hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(2), hotlimit.WithObserver(obs))
			require.NoError(t, err)
			require.True(t, svc.Take("u1", "api", 3).Allowed) // drained
			require.True(t, svc.Take("u2", "api", 3).Allowed)

			events = nil
			want := hotlimit.Decision{Limit: 3, RetryAfter: tc.retry, ResetAfter: tc.retry}
			d := svc.Take("u3", "api", 1)
			assert.Equal(t, want, d, "the cap's Decision")
			require.Len(t, events, 1)
			assert.Equal(t, hotlimit.OutcomeDenied, events[0].Outcome)
			assert.Equal(t, 1, events[0].N)
			assert.Equal(t, want, events[0].Decision, "the observed Decision")

			events = nil
			assert.False(t, svc.Allow("u3", "api"))
			require.Len(t, events, 1)
			assert.Equal(t, hotlimit.OutcomeDenied, events[0].Outcome)
			assert.Equal(t, hotlimit.Decision{Limit: 3}, events[0].Decision, "the observed Decision of Allow")
			assert.Equal(t, 2, svc.Len(), "the pairs held kept their place")

			now.Add(int64(d.RetryAfter) - 1)
			assert.False(t, svc.Take("u3", "api", 1).Allowed, "1 ns before RetryAfter a pair held is still in use")
			now.Add(1)
			assert.True(t, svc.Allow("u3", "api"), "after RetryAfter every pair held is idle")
			assert.Equal(t, 2, svc.Len())
		})
	}
}

// TestAShadowLimitTakesRoomUnderItsLimitersKeyCap pins what Config.Shadow
// and the README's shadow rollout say: a limit in shadow mode shares the
// limiter of an equal limit of another rule, whatever its scope, so under
// hotlimit.WithMaxKeys its keys fill the same room; the other rule's new
// keys are then refused for real, while the shadow limit's own new keys
// still pass. A shadow limit of another window holds its keys apart.
func TestAShadowLimitTakesRoomUnderItsLimitersKeyCap(t *testing.T) {
	const maxKeys = 4
	enforced := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}
	for name, tc := range map[string]struct {
		shadow  hotlimit.Config
		refused bool // the enforced rule's new key, once the shadow limit's keys fill the cap
	}{
		"same limit":       {hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Shadow: true}, true},
		"same limit, user": {hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser, Shadow: true}, true},
		"another window":   {hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: 2 * time.Minute, Shadow: true}, false},
	} {
		t.Run(name, func(t *testing.T) {
			clock, _ := frozen(int64(time.Hour))
			rules := service.Rules{Default: service.Limits{enforced}, APIs: map[string]service.Limits{"GET /new": {tc.shadow}}}
			svc, err := service.NewFromRules(rules, clock, hotlimit.WithMaxKeys(maxKeys))
			require.NoError(t, err)
			for i := range maxKeys + 2 {
				require.True(t, svc.Take("user-"+strconv.Itoa(i), "GET /new", 1).Allowed, "user %d: a shadow limit never denies", i)
			}
			d := svc.Take("newcomer", "GET /", 1)
			assert.Equal(t, !tc.refused, d.Allowed, "the enforced rule's new key")
		})
	}
}
