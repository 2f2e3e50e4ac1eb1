package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestAllowedRequestIsNotDecidedByALimitThatCouldNotDecide: a rule of a
// memory limit (3 a minute) and a limit whose backend is unreachable, its
// failure policy passing every request with a Remaining of 0 that counts
// nothing, in either order. The memory limit decided each allowed request,
// with 2, then 1 left: TakePolicyContext names it with its own numbers,
// TakeEach lists it first with no Err, and the observer hears of it,
// allowed, not near the limit. The backend's made-up 0 was the least share
// left, so the backend's limit was named instead, with Remaining 0 and
// Err set, and the observer heard near_limit of a count no limiter kept.
// A report (n = 0) is decided so too.
func TestAllowedRequestIsNotDecidedByALimitThatCouldNotDecide(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		s, events := unreachableBeside(t, rule, remote)

		d, c, err := s.TakePolicyContext(context.Background(), "u", "GET /", 1)
		require.ErrorIs(t, err, limitertest.ErrUnreachable, "%v: the backend failed", rule)
		assert.True(t, d.Allowed, "%v", rule)
		assert.Equal(t, memory, c, "%v: TakePolicyContext names the limit that decided", rule)
		assert.Equal(t, 3, d.Limit, "%v: with its own Limit", rule)
		assert.Equal(t, 2, d.Remaining, "%v: and its own Remaining", rule)

		d, each, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
		require.ErrorIs(t, err, limitertest.ErrUnreachable, "%v", rule)
		assert.True(t, d.Allowed, "%v", rule)
		require.Len(t, each, 2, "%v", rule)
		assert.Equal(t, memory, each[0].Config, "%v: TakeEach lists the limit that decided first", rule)
		assert.NoError(t, each[0].Err, "%v: it decided", rule)
		assert.Equal(t, 1, each[0].Decision.Remaining, "%v: its own Remaining", rule)
		assert.Equal(t, remote, each[1].Config, "%v", rule)
		assert.ErrorIs(t, each[1].Err, limitertest.ErrUnreachable, "%v: the backend could not decide", rule)

		_, each, err = s.TakeEach(context.Background(), "u", "GET /", 0, nil)
		require.ErrorIs(t, err, limitertest.ErrUnreachable, "%v", rule)
		require.Len(t, each, 2, "%v", rule)
		assert.Equal(t, memory, each[0].Config, "%v: a report is decided by the memory limit too", rule)
		assert.NoError(t, each[0].Err, "%v", rule)

		require.Len(t, *events, 3, "%v", rule)
		for i, e := range *events {
			assert.Equal(t, memory, e.Policy, "%v event %d: the observer hears of the limit that decided", rule, i)
			assert.Equal(t, hotlimit.OutcomeAllowed, e.Outcome, "%v event %d: 2 or 1 of 3 left is not near the limit", rule, i)
		}
	}
}

// TestAllowedRequestUnderLimitsThatAllCouldNotDecideIsTheLeastShare: when
// no limit of a rule could decide, the most constrained by its failure
// policy's numbers decides an allowed request, as when every limit decided:
// there is no better one to name.
func TestAllowedRequestUnderLimitsThatAllCouldNotDecideIsTheLeastShare(t *testing.T) {
	a := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	b := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	down := &limitertest.UnreachableRefunder{}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{a, b}},
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return down, nil }))
	require.NoError(t, err)
	d, each, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
	require.ErrorIs(t, err, limitertest.ErrUnreachable)
	assert.True(t, d.Allowed)
	require.Len(t, each, 2)
	assert.Equal(t, a, each[0].Config, "a tie on a share of 0: the first limit")
	assert.ErrorIs(t, each[0].Err, limitertest.ErrUnreachable, "it could not decide")
}

// TestAllowedRequestUnderShadowLimitsIsNotDecidedByOneThatCouldNotDecide:
// under a rule whose every limit is in shadow mode, the most constrained of
// them names an allowed request, and, as among enforced limits, one whose
// backend could not decide (its failure policy's Remaining of 0) is passed
// over for the memory limit, which decided: TakeEach lists that one first
// and the observer hears of it.
func TestAllowedRequestUnderShadowLimitsIsNotDecidedByOneThatCouldNotDecide(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Shadow: true}
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Shadow: true}
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		s, events := unreachableBeside(t, rule, remote)
		d, each, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
		require.ErrorIs(t, err, limitertest.ErrUnreachable, "%v", rule)
		assert.True(t, d.Allowed, "%v", rule)
		require.Len(t, each, 2, "%v: every limit is in shadow mode, so every one is listed", rule)
		assert.Equal(t, memory, each[0].Config, "%v: the limit that decided first", rule)
		assert.NoError(t, each[0].Err, "%v", rule)
		require.Len(t, *events, 1, "%v", rule)
		assert.Equal(t, memory, (*events)[0].Policy, "%v", rule)
		assert.Equal(t, hotlimit.OutcomeAllowed, (*events)[0].Outcome, "%v", rule)
	}
}

// unreachableBeside returns a service of the default rule, under a frozen
// clock, whose limit remote is on a backend that cannot be reached, and the
// events its observer hears.
func unreachableBeside(t *testing.T, rule service.Limits, remote hotlimit.Config) (*service.Service, *[]hotlimit.Event) {
	t.Helper()
	var events []hotlimit.Event
	s, err := service.NewFromRules(service.Rules{Default: rule}, hotlimit.WithClock(func() int64 { return 1 }),
		hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { events = append(events, e) })),
		limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{}, service.NewLimiter))
	require.NoError(t, err)
	return s, &events
}
