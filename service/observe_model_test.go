package service_test

import (
	"context"
	"fmt"
	"math"
	"math/bits"
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

// ruleModel is the sequential model of a rule of several limits under a
// frozen clock, where every limit is a counter of its capacity per key of its
// scope: it admits n while used + n ≤ capacity, and a denial's give-back
// restores the counters exactly.
type ruleModel struct {
	limits service.Limits // in the order the rule asks them: sliding logs last
	used   []map[string]int
}

func newRuleModel(ls service.Limits) *ruleModel {
	m := &ruleModel{limits: slices.Clone(ls)}
	slices.SortStableFunc(m.limits, func(a, b hotlimit.Config) int {
		return b2i(a.Algorithm == hotlimit.SlidingLog) - b2i(b.Algorithm == hotlimit.SlidingLog)
	})
	for range m.limits {
		m.used = append(m.used, map[string]int{})
	}
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func scopeKey(scope hotlimit.Scope, user, api string) string {
	switch scope {
	case hotlimit.PerUser:
		return "u" + user
	case hotlimit.PerAPI:
		return "a" + api
	case hotlimit.Global:
		return "g"
	}
	return "p" + user + "|" + api
}

// own is limit i's own Decision for its key, with the counter at used.
func (m *ruleModel) own(i, used int) hotlimit.Decision {
	c := m.limits[i]
	if c.Algorithm == hotlimit.Unlimited {
		return hotlimit.Decision{Allowed: true, Limit: math.MaxInt, Remaining: math.MaxInt}
	}
	return hotlimit.Decision{Allowed: true, Limit: c.Limit, Remaining: c.Capacity() - used}
}

// lessShareModel reports whether ra/ca < rb/cb (Remaining below 0 as 0,
// capacity below 1 as 1).
func lessShareModel(ra, ca, rb, cb int) bool {
	ahi, alo := bits.Mul64(uint64(max(ra, 0)), uint64(max(cb, 1)))
	bhi, blo := bits.Mul64(uint64(max(rb, 0)), uint64(max(ca, 1)))
	return ahi < bhi || ahi == bhi && alo < blo
}

// event is what the model expects the observer to hear.
type event struct {
	policy    hotlimit.Config
	outcome   hotlimit.Outcome
	allowed   bool
	limit     int
	remaining int
	never     bool // RetryAfter is hotlimit.Never
}

// take plays Take(user, api, n) on the model and returns the Event.
func (m *ruleModel) take(user, api string, n int, near float64) event {
	keys := make([]string, len(m.limits))
	for i, c := range m.limits {
		keys[i] = scopeKey(c.Scope, user, api)
	}
	allShadow := !slices.ContainsFunc(m.limits, func(c hotlimit.Config) bool { return !c.Shadow })
	inGroup := func(i int) bool { return !m.limits[i].Shadow || allShadow }
	// fold merges the decisions of the limits in the group, in order, but
	// skip: the least Remaining (the first on a tie), and the decider, the
	// first that denies, else the least share (the first on a tie).
	fold := func(decs []hotlimit.Decision, skip int, denied []bool) (d hotlimit.Decision, decider int, any bool) {
		decider = -1
		for i := range m.limits {
			if i == skip || !inGroup(i) {
				continue
			}
			cd := decs[i]
			if !any || cd.Remaining < d.Remaining {
				d.Limit, d.Remaining = cd.Limit, cd.Remaining
			}
			switch {
			case decider < 0:
				decider = i
			case denied != nil && denied[decider]:
			case denied != nil && denied[i]:
				decider = i
			case lessShareModel(cd.Remaining, m.limits[i].Capacity(), decs[decider].Remaining, m.limits[decider].Capacity()):
				decider = i
			}
			any = true
		}
		return d, decider, any
	}
	classify := func(i int, remaining int) hotlimit.Outcome {
		return hotlimit.ClassifyCapacity(hotlimit.Decision{Allowed: true, Remaining: remaining}, false, near, m.limits[i].Capacity())
	}
	decs := make([]hotlimit.Decision, len(m.limits))
	if n < 1 {
		denied := make([]bool, len(m.limits))
		for i := range m.limits {
			decs[i] = m.own(i, m.used[i][keys[i]])
			denied[i] = n < 0
		}
		d, dec, _ := fold(decs, -1, denied)
		if n < 0 {
			return event{policy: m.limits[dec], outcome: hotlimit.OutcomeDenied, limit: d.Limit, remaining: d.Remaining, never: true}
		}
		return event{policy: m.limits[dec], outcome: classify(dec, decs[dec].Remaining), allowed: true, limit: d.Limit, remaining: d.Remaining}
	}
	// A request some limit not in shadow mode can never hold is taken by
	// none, and decided by the first such limit.
	if i := slices.IndexFunc(m.limits, func(c hotlimit.Config) bool {
		return !c.Shadow && c.Algorithm != hotlimit.Unlimited && n > c.Capacity()
	}); i >= 0 {
		for j := range m.limits {
			decs[j] = m.own(j, m.used[j][keys[j]])
		}
		d, _, _ := fold(decs, -1, nil)
		return event{policy: m.limits[i], outcome: hotlimit.OutcomeDenied, limit: d.Limit, remaining: d.Remaining, never: true}
	}
	took := make([]bool, len(m.limits))
	shadowDenier := -1
	for i, c := range m.limits {
		u := m.used[i][keys[i]]
		if c.Algorithm == hotlimit.Unlimited || u+n <= c.Capacity() {
			m.used[i][keys[i]] = u + n
			took[i] = true
			decs[i] = m.own(i, u+n)
			continue
		}
		decs[i] = m.own(i, u)
		if c.Shadow {
			if shadowDenier < 0 {
				shadowDenier = i
			}
			continue
		}
		// A denial: give back what the limits before it took, then
		// report the others, the denier's own decision in its place.
		for j := range i {
			if took[j] {
				m.used[j][keys[j]] -= n
			}
			decs[j] = m.own(j, m.used[j][keys[j]])
		}
		for j := i + 1; j < len(m.limits); j++ {
			decs[j] = m.own(j, m.used[j][keys[j]])
		}
		d, _, _ := fold(decs, -1, nil)
		return event{policy: c, outcome: hotlimit.OutcomeDenied, limit: d.Limit, remaining: d.Remaining}
	}
	d, dec, _ := fold(decs, -1, nil)
	if shadowDenier >= 0 {
		if allShadow {
			dec = shadowDenier
		}
		return event{policy: m.limits[shadowDenier], outcome: hotlimit.OutcomeShadowDenied, allowed: true, limit: d.Limit, remaining: d.Remaining}
	}
	return event{policy: m.limits[dec], outcome: classify(dec, decs[dec].Remaining), allowed: true, limit: d.Limit, remaining: d.Remaining}
}

// TestObserverEventOfSeveralLimitsAgreesWithAModel runs random rules of one
// to four limits (random algorithms, bursts, scopes, shadow modes, and
// Unlimited alone) through random requests (n from -1 to 6, above some
// limits) under a clock frozen for 20 requests at a time, then moved on an
// hour, when every limit is full again, and checks the Event the observer hears of
// each against a sequential model of the rule in which each limit is a
// counter of its capacity: its Policy (the limit that denied, the first in
// shadow mode that would have, or the one with the least share of its
// capacity left; for a request some limit not in shadow mode can never
// admit, the first such limit), Outcome, Allowed, Limit, Remaining, and a
// RetryAfter of Never exactly when some limit not in shadow mode can never
// admit n.
func TestObserverEventOfSeveralLimitsAgreesWithAModel(t *testing.T) {
	rules, steps := 300, 80
	if testing.Short() {
		rules = 60
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	var seen [5]int
	for r := 0; r < rules; r++ {
		ls := randomRule(rng)
		if (service.Rules{Default: ls}).Validate() != nil {
			continue
		}
		var now atomic.Int64
		now.Store(int64(1000 * time.Hour)) // frozen, on every window's boundary
		var last hotlimit.Event
		heard := 0
		obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { last, heard = e, heard+1 })
		s, err := service.NewFromRules(service.Rules{Default: ls}, hotlimit.WithClock(now.Load), hotlimit.WithObserver(obs))
		require.NoError(t, err)
		m := newRuleModel(ls)
		for step := range steps {
			if step%20 == 19 {
				// An hour on, on every window's boundary again: every
				// limit is full, as a fresh model's counters are.
				now.Add(int64(time.Hour))
				m = newRuleModel(ls)
			}
			user, api := []string{"u", "v"}[rng.IntN(2)], []string{"a", "b"}[rng.IntN(2)]
			n := []int{-1, 0, 1, 1, 1, 2, 3, 6}[rng.IntN(8)]
			at := fmt.Sprintf("rule %d %v step %d (%s, %s, n=%d)", r, ls, step, user, api, n)
			var d hotlimit.Decision
			viaAllow := n == 1 && rng.IntN(2) == 0
			if viaAllow {
				d.Allowed = s.Allow(user, api)
			} else {
				d = s.Take(user, api, n)
			}
			want := m.take(user, api, n, hotlimit.DefaultNearLimit)
			require.Equal(t, step+1, heard, "%s: one Event per decision", at)
			seen[last.Outcome]++
			assert.Equal(t, "default", last.Rule, at)
			assert.Equal(t, want.policy, last.Policy, "%s: the Event's Policy", at)
			assert.Equal(t, want.outcome, last.Outcome, "%s: the Event's Outcome", at)
			assert.Equal(t, n, last.N, at)
			assert.Equal(t, want.allowed, d.Allowed, "%s: the decision", at)
			assert.Equal(t, want.allowed, last.Decision.Allowed, "%s: the Event's Allowed", at)
			assert.Equal(t, want.limit, last.Decision.Limit, "%s: the Event's Limit", at)
			assert.Equal(t, want.remaining, last.Decision.Remaining, "%s: the Event's Remaining", at)
			switch {
			case viaAllow: // Allow's Event carries no durations
			case want.allowed:
				assert.Zero(t, last.Decision.RetryAfter, "%s: an allowed request's RetryAfter", at)
			case want.never:
				assert.Equal(t, hotlimit.Never, last.Decision.RetryAfter, "%s: a request that can never pass", at)
			default:
				assert.Positive(t, last.Decision.RetryAfter, "%s: a denial's RetryAfter", at)
				assert.NotEqual(t, hotlimit.Never, last.Decision.RetryAfter, "%s: a request that can pass later", at)
			}
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("outcomes heard: allowed %d, near_limit %d, denied %d, shadow_denied %d",
		seen[hotlimit.OutcomeAllowed], seen[hotlimit.OutcomeNearLimit], seen[hotlimit.OutcomeDenied], seen[hotlimit.OutcomeShadowDenied])
	for _, o := range []hotlimit.Outcome{hotlimit.OutcomeAllowed, hotlimit.OutcomeNearLimit, hotlimit.OutcomeDenied, hotlimit.OutcomeShadowDenied} {
		require.Positive(t, seen[o], "some Events are %v", o)
	}
}

// TestSeveralLimitsDenialTieGoesToTheFirstLimit: a denied Decision carries
// the Limit and Remaining of the limit with the least Remaining, the first
// in the rule's order on a tie, whichever limit denied (as composite's do).
// A pair's 10/s bucket emptied, and its user's 15/min window emptied
// through another api: the limit asked first denies, both have 0 left, and
// the Decision's Limit is the first limit's, whichever of the two it is.
func TestSeveralLimitsDenialTieGoesToTheFirstLimit(t *testing.T) {
	second := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	minute := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 15, Window: time.Minute, Scope: hotlimit.PerUser}
	for _, rule := range []service.Limits{{second, minute}, {minute, second}} {
		clock, _ := frozen(int64(time.Hour))
		s, err := service.NewFromRules(service.Rules{Default: rule, APIs: map[string]service.Limits{"b": {minute}}}, clock)
		require.NoError(t, err)
		require.True(t, s.Take("u", "a", 10).Allowed)
		require.True(t, s.Take("u", "b", 5).Allowed, "the user's window emptied through api b")
		d := s.Take("u", "a", 1)
		require.False(t, d.Allowed)
		assert.Equal(t, 0, d.Remaining)
		assert.Equal(t, rule[0].Limit, d.Limit, "rule %v: the first limit's on a tie", rule)
		d, _, err = s.TakeEach(context.Background(), "u", "a", 1, nil)
		require.NoError(t, err)
		assert.Equal(t, rule[0].Limit, d.Limit, "rule %v: TakeEach's Decision, the first limit's on a tie", rule)
	}
}
