package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// randomLimit returns a valid limit of a random algorithm, burst, scope and
// shadow mode.
func randomLimit(rng *rand.Rand) hotlimit.Config {
	algs := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog,
		hotlimit.GCRA, hotlimit.SlidingCounter, hotlimit.Unlimited}
	c := hotlimit.Config{Algorithm: algs[rng.IntN(len(algs))], Scope: hotlimit.Scope(rng.IntN(4)), Shadow: rng.IntN(4) == 0}
	if c.Algorithm == hotlimit.Unlimited {
		return c
	}
	c.Limit = 1 + rng.IntN(5)
	c.Window = []time.Duration{500 * time.Millisecond, time.Second, 3 * time.Second}[rng.IntN(3)]
	if c.Algorithm.HasBurst() && rng.IntN(2) == 0 {
		c.Burst = c.Limit + rng.IntN(4)
	}
	return c
}

// randomRule returns a rule of 1 to 4 distinct limits, with at most one
// sliding log: the refund of a sliding log asked before another (only
// possible with two) expires its oldest entry rather than the refunded one,
// as documented, so it would not keep the state of the same limit alone.
// Unlimited comes alone, as a rule takes it.
func randomRule(rng *rand.Rand) service.Limits {
	ls := randomLimits(rng)
	if len(ls) > 1 {
		ls = slices.DeleteFunc(ls, func(c hotlimit.Config) bool { return c.Algorithm == hotlimit.Unlimited })
		if len(ls) == 0 {
			ls = service.Limits{{Algorithm: hotlimit.Unlimited}}
		}
	}
	return ls
}

// randomLimits returns 1 to 4 distinct limits for randomRule.
func randomLimits(rng *rand.Rand) service.Limits {
	var ls service.Limits
	logs := 0
	for len(ls) < 1+rng.IntN(4) {
		c := randomLimit(rng)
		dup := false
		for _, o := range ls {
			dup = dup || (o.Algorithm == c.Algorithm && o.Limit == c.Limit && o.Window == c.Window && o.Scope == c.Scope)
		}
		if dup || c.Algorithm == hotlimit.SlidingLog && logs > 0 {
			continue
		}
		if c.Algorithm == hotlimit.SlidingLog {
			logs++
		}
		ls = append(ls, c)
	}
	return ls
}

// TestTakeEachAgreesWithTakeAndTakePolicyAndEachLimitAlone runs random rules
// (1 to 4 limits of random algorithms, bursts, scopes and shadow modes)
// through random requests (n from -1 to 3, from two users to two apis) under
// a stepped fake clock, on three identical services asked through Take,
// TakePolicy and TakeEach: they must agree on Allowed and RetryAfter, and
// TakeEach must return Take's Decision and list TakePolicy's first. Each
// limit also runs alone, in a service of that one limit, driven in lockstep:
// it takes n when the rule passed the request, and otherwise only reports
// (the limit that denied asks for n, which a denial does not count); TakeEach's
// entry of the limit must carry that lone limit's Limit, Remaining and
// ResetAfter.
func TestTakeEachAgreesWithTakeAndTakePolicyAndEachLimitAlone(t *testing.T) {
	rules, steps := 300, 120
	if testing.Short() {
		rules = 60
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	built, several, denied, shadowed := 0, 0, 0, 0
	for r := 0; r < rules; r++ {
		ls := randomRule(rng)
		var now atomic.Int64
		now.Store(int64(time.Hour))
		clock := hotlimit.WithClock(now.Load)
		newSvc := func(ls service.Limits) *service.Service {
			s, err := service.NewFromRules(service.Rules{Default: ls}, clock)
			require.NoError(t, err, "rule %d: %v", r, ls)
			return s
		}
		if err := (service.Rules{Default: ls}).Validate(); err != nil {
			continue // a shape the rules refuse (such as a limit and its shadow copy)
		}
		built++
		if len(ls) > 1 {
			several++
		}
		byTake, byPolicy, byEach := newSvc(ls), newSvc(ls), newSvc(ls)
		alone := make([]*service.Service, len(ls))
		for j, c := range ls {
			alone[j] = newSvc(service.Limits{c})
		}
		allShadow := true
		for _, c := range ls {
			allShadow = allShadow && c.Shadow
		}
		if len(ls) > 1 && ls[0].Shadow != ls[len(ls)-1].Shadow {
			shadowed++
		}
		users, apis := []string{"u", "v"}, []string{"a", "b"}
		for step := 0; step < steps; step++ {
			now.Add(int64(rng.IntN(300)) * int64(time.Millisecond))
			user, api := users[rng.IntN(2)], apis[rng.IntN(2)]
			n := []int{-1, 0, 1, 1, 1, 1, 2, 3}[rng.IntN(8)]
			at := fmt.Sprintf("rule %d %v step %d (%s, %s, n=%d)", r, ls, step, user, api, n)

			d := byTake.Take(user, api, n)
			pd, pc := byPolicy.TakePolicy(user, api, n)
			var buf [4]service.LimitDecision
			ed, each, err := byEach.TakeEach(context.Background(), user, api, n, buf[:0])
			require.NoError(t, err, at)
			assert.Equal(t, d, ed, "%s: TakeEach returns Take's Decision", at)
			assert.Equal(t, d.Allowed, pd.Allowed, "%s: TakePolicy's Allowed", at)
			assert.Equal(t, d.RetryAfter, pd.RetryAfter, "%s: TakePolicy's RetryAfter", at)
			require.NotEmpty(t, each, at)
			assert.Equal(t, service.LimitDecision{Config: pc, Decision: pd}, each[0], "%s: TakeEach lists TakePolicy's limit first", at)

			want := 0
			for _, c := range ls {
				if !c.Shadow || allShadow {
					want++
				}
			}
			require.Len(t, each, want, "%s: every limit but those in shadow mode (unless all are)", at)
			if !d.Allowed {
				denied++
			}

			passed := d.Allowed && n >= 1
			for j, c := range ls {
				var ld *service.LimitDecision
				for k := range each {
					if each[k].Config == c {
						require.Nil(t, ld, "%s: limit %v listed twice", at, c)
						ld = &each[k]
					}
				}
				var alone1 hotlimit.Decision
				switch {
				case passed, n < 1, ld == &each[0] && !d.Allowed:
					alone1 = alone[j].Take(user, api, n)
				default:
					alone1 = alone[j].Take(user, api, 0)
				}
				if ld == nil {
					assert.True(t, c.Shadow && !allShadow, "%s: limit %v missing", at, c)
					continue
				}
				assert.Equal(t, d.Allowed, ld.Decision.Allowed, "%s: limit %v carries the rule's Allowed", at, c)
				assert.Equal(t, d.RetryAfter, ld.Decision.RetryAfter, "%s: limit %v carries the rule's RetryAfter", at, c)
				assert.Equal(t, alone1.Limit, ld.Decision.Limit, "%s: limit %v's own Limit", at, c)
				assert.Equal(t, alone1.Remaining, ld.Decision.Remaining, "%s: limit %v's own Remaining", at, c)
				assert.Equal(t, alone1.ResetAfter, ld.Decision.ResetAfter, "%s: limit %v's own ResetAfter", at, c)
			}
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%d rules built, %d of several limits, %d with limits in shadow mode and not, %d denials", built, several, shadowed, denied)
	// Three rules in five have several limits (an Unlimited drawn among
	// others is dropped). Fewer than a quarter of 60 rules (-short) has a
	// chance of 5e-9 (binomial), where fewer than a third had one of 6e-6.
	require.GreaterOrEqual(t, several, built/4, "a good share of the rules must be of several limits")
	require.Positive(t, denied, "some requests must be denied")
	require.Positive(t, shadowed, "some rules must mix limits in shadow mode and not")
}
