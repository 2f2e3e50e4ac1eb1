package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestAllShadowRuleIsDecidedByTheLimitThatWouldHaveDenied: in a rule whose
// limits are all in shadow mode, a limit that would have denied decides the
// request, and TakePolicy names it with its own Remaining, even when a later
// limit that passed is left with a smaller share of its capacity. Windows of
// 10 and 15, 6 requests at a time: the first Take leaves 4/10 and 9/15; the
// second would be denied by the 10 (4 left, 40%), while the 15 passes it and
// holds 3 (20%). The 10 is the limit the caller hears of: the one it would
// have hit.
func TestAllShadowRuleIsDecidedByTheLimitThatWouldHaveDenied(t *testing.T) {
	ten := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Shadow: true}
	fifteen := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 15, Window: time.Minute, Shadow: true}
	var last hotlimit.Event
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { last = e })
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{ten, fifteen}}, clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)

	d, policy := s.TakePolicy("u", "a", 6)
	require.True(t, d.Allowed)
	require.Equal(t, 10, policy.Limit, "4/10 is the least share left")
	require.Equal(t, 4, d.Remaining)

	d, policy = s.TakePolicy("u", "a", 6)
	require.True(t, d.Allowed, "shadow mode lets the request through")
	require.Equal(t, hotlimit.OutcomeShadowDenied, last.Outcome)
	assert.Equal(t, 10, policy.Limit, "TakePolicy names the limit that would have denied")
	assert.Equal(t, 4, d.Remaining, "with its own Remaining")
	assert.Equal(t, policy, last.Policy, "the Event names the same limit")
}
