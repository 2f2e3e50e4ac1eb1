package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/service"
)

// TestTakeEachIntoAStackBufferDoesNotAllocate: on the in-memory limiters,
// TakeEach with a dst on the stack, of room for the rule's limits, allocates
// nothing, for a rule of one limit or of several, of every algorithm and
// scope, with a limit in shadow mode, and for a denied request. The clock
// is frozen: on a running one a token bucket refills to full between two
// requests, and a fixed window's or a sliding counter's counts stop
// weighing, so a denial that gives its take back then evicts the key (see
// their packages' Refunds), and the key's next request allocates its cell
// again.
func TestTakeEachIntoAStackBufferDoesNotAllocate(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	lots := 1 << 20
	rules := map[string]service.Limits{
		"one token bucket":  {{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second}},
		"one sliding log":   {{Algorithm: hotlimit.SlidingLog, Limit: 1000, Window: time.Second, Scope: hotlimit.PerUser}},
		"one unlimited":     {{Algorithm: hotlimit.Unlimited}},
		"one in shadow":     {{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour, Shadow: true}},
		"one that denies":   {{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Hour}},
		"two of two scopes": {{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second}, {Algorithm: hotlimit.FixedWindow, Limit: lots, Window: time.Minute, Scope: hotlimit.PerAPI}},
		"four": {
			{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second, Burst: lots},
			{Algorithm: hotlimit.SlidingLog, Limit: 1000, Window: time.Millisecond, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Hour, Scope: hotlimit.Global, Shadow: true},
			{Algorithm: hotlimit.SlidingCounter, Limit: 100000, Window: time.Minute, Scope: hotlimit.PerAPI},
		},
		"four that deny": {
			{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second},
			{Algorithm: hotlimit.FixedWindow, Limit: lots, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.SlidingCounter, Limit: 100000, Window: time.Minute, Scope: hotlimit.PerAPI},
			{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Hour, Scope: hotlimit.Global},
		},
	}
	for name, ls := range rules {
		t.Run(name, func(t *testing.T) {
			s, err := service.NewFromRules(service.Rules{Default: ls}, clock)
			require.NoError(t, err)
			ctx := context.Background()
			var buf [4]service.LimitDecision
			_, each, err := s.TakeEach(ctx, "user", "GET /pay", 1, buf[:0]) // the keys are stored
			require.NoError(t, err)
			require.NotEmpty(t, each)
			require.Same(t, &buf[0], &each[0], "TakeEach appends into dst's array")
			assert.Zero(t, testing.AllocsPerRun(100, func() {
				_, each, _ = s.TakeEach(ctx, "user", "GET /pay", 1, buf[:0])
			}))
			assert.Zero(t, testing.AllocsPerRun(100, func() {
				_, each, _ = s.TakeEach(ctx, "user", "GET /pay", 0, buf[:0])
			}), "a report")
		})
	}
}

// TestTakeEachAppendsAfterWhatDstHolds: TakeEach appends, as append does: to
// a nil dst, to one of no room (a new array, dst's untouched), and after
// what dst holds, which it keeps.
func TestTakeEachAppendsAfterWhatDstHolds(t *testing.T) {
	ls := service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second},
		{Algorithm: hotlimit.FixedWindow, Limit: 9, Window: time.Minute, Scope: hotlimit.PerUser},
	}
	s, err := service.NewFromRules(service.Rules{Default: ls})
	require.NoError(t, err)
	ctx := context.Background()

	_, each, err := s.TakeEach(ctx, "u", "a", 1, nil)
	require.NoError(t, err)
	assert.Len(t, each, 2, "a nil dst")

	full := make([]service.LimitDecision, 1)
	full[0].Config.Limit = -7 // a marker
	_, each, err = s.TakeEach(ctx, "u", "a", 1, full)
	require.NoError(t, err)
	require.Len(t, each, 3, "after what dst holds")
	assert.Equal(t, -7, each[0].Config.Limit, "dst's element is kept")
	assert.Equal(t, 1, cap(full), "dst is not grown in place")
	assert.ElementsMatch(t, []hotlimit.Config{ls[0], ls[1]}, []hotlimit.Config{each[1].Config, each[2].Config})

	room := make([]service.LimitDecision, 1, 8)
	_, each, err = s.TakeEach(ctx, "u", "a", 0, room)
	require.NoError(t, err)
	require.Len(t, each, 3)
	assert.Same(t, &room[0], &each[0], "into dst's array when it has room")

	_, each, err = s.TakeEach(ctx, "u", "a", -1, nil)
	require.NoError(t, err)
	assert.Len(t, each, 2, "n < 0 lists the limits too")
	for _, ld := range each {
		assert.False(t, ld.Decision.Allowed, "n < 0 is denied")
	}
}

// TestTakeEachOfTheLargestRuleGrowsASmallDst: a rule of the most limits a
// rule may have, into a dst of room for 4: TakeEach grows it as append
// does, and lists every limit once.
func TestTakeEachOfTheLargestRuleGrowsASmallDst(t *testing.T) {
	var ls service.Limits
	for i := range composite.MaxChildren {
		ls = append(ls, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10 + i, Window: time.Minute, Scope: hotlimit.Scope(i % 4)})
	}
	s, err := service.NewFromRules(service.Rules{Default: ls})
	require.NoError(t, err)
	var buf [4]service.LimitDecision
	d, each, err := s.TakeEach(context.Background(), "u", "a", 1, buf[:0])
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Len(t, each, len(ls))
	got := make([]hotlimit.Config, len(each))
	for i, ld := range each {
		got[i] = ld.Config
		assert.Equal(t, ld.Config.Limit-1, ld.Decision.Remaining, "%v: its own Remaining", ld.Config)
	}
	assert.ElementsMatch(t, ls, got)
	assert.Equal(t, ls[0], each[0].Config, "the least share left: 9 of 10")
}
