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
