package hotlimitotel_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

func point(rule, outcome string) string {
	return "hotlimit.outcome=" + outcome + ",hotlimit.rule=" + rule
}

// TestOperatorSequence drives a known sequence through a service on rules
// read from JSON, collects through a manual reader, reloads the rules with
// a rule removed, one renamed and one changed, and checks the points:
// the documented values, no counter going down across the reload, the keys
// held following the service, and attributes bounded by the rules whatever
// users, APIs and plans come.
func TestOperatorSequence(t *testing.T) {
	m, reader := setup(t)
	rules, err := service.LoadRules(strings.NewReader(limitertest.OperatorRules))
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	require.NoError(t, err)
	m.WatchKeys("api", svc.Len)

	for range 7 {
		svc.Allow("alice", "GET /")
	}
	for range 25 {
		svc.Take("partner", "GET /", 2)
	}
	for range 6 {
		svc.Take("bob", "GET /pay", 4)
	}
	for range 6 {
		svc.Allow("carol", "GET /new")
	}
	plan := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Second}
	for range 2 {
		_, err := svc.TakeWith("dave", "GET /", plan, 2)
		require.NoError(t, err)
	}
	got := sums(t, reader)
	assert.Equal(t, map[string]int64{
		point("default", "allowed"): 3, point("default", "near_limit"): 2, point("default", "denied"): 2,
		point(`users["partner"]`, "allowed"): 25,
		// 10/s burst 20 by 4: Remaining 16 12 8, then 4 0 at most 20% of
		// the burst, then denied.
		point(`apis["GET /pay"]`, "allowed"): 3, point(`apis["GET /pay"]`, "near_limit"): 2, point(`apis["GET /pay"]`, "denied"): 1,
		point(`apis["GET /new"]`, "allowed"): 2, point(`apis["GET /new"]`, "shadow_denied"): 4,
		point(service.OverrideRule, "allowed"): 1, point(service.OverrideRule, "denied"): 1,
	}, nonZero(got["hotlimit.decisions"]))
	assert.Equal(t, int64(50), got["hotlimit.requests"][point(`users["partner"]`, "allowed")])
	assert.Equal(t, int64(8), got["hotlimit.requests"][point(`apis["GET /pay"]`, "near_limit")])
	assert.Equal(t, map[string]int64{"hotlimit.limiter=api": int64(svc.Len())}, got["hotlimit.key.count"])
	keysBefore := got["hotlimit.key.count"]["hotlimit.limiter=api"]

	// Reload: the default's limit changes, the partner's rule goes, GET
	// /new is renamed.
	reloaded, err := service.LoadRules(strings.NewReader(strings.NewReplacer(
		`"limit": 5,`, `"limit": 8,`,
		`"users":   {"partner": [{"algorithm": "Unlimited"}]},`, ``,
		`"GET /new"`, `"GET /v2/new"`,
	).Replace(limitertest.OperatorRules)))
	require.NoError(t, err)
	require.NoError(t, svc.Replace(reloaded))
	svc.Allow("erin", "GET /")
	svc.Allow("partner", "GET /")
	svc.Allow("carol", "GET /v2/new")
	after := sums(t, reader)
	for name, points := range got {
		if name == "hotlimit.key.count" {
			continue
		}
		for p, v := range points {
			assert.GreaterOrEqual(t, after[name][p], v, "%s %s went down", name, p)
		}
	}
	assert.Equal(t, got["hotlimit.decisions"][point(`users["partner"]`, "allowed")], after["hotlimit.decisions"][point(`users["partner"]`, "allowed")], "a removed rule's point stays still")
	assert.Equal(t, got["hotlimit.decisions"][point("default", "allowed")]+2, after["hotlimit.decisions"][point("default", "allowed")], "the changed default counts on")
	assert.Equal(t, int64(1), after["hotlimit.decisions"][point(`apis["GET /v2/new"]`, "allowed")])
	assert.Equal(t, int64(svc.Len()), after["hotlimit.key.count"]["hotlimit.limiter=api"])
	// alice's key went with the default's old limiter; erin and partner
	// hold one each under the new one, carol one more under each limit of
	// GET /v2/new (her GET /new pairs stay until swept).
	assert.Equal(t, keysBefore-1+2+2, after["hotlimit.key.count"]["hotlimit.limiter=api"])

	// Cardinality: any user and API names, many plans.
	for i := range 500 {
		name := "n" + strconv.Itoa(i) + "\"{}\n\xff"
		svc.Allow(name, name)
		c := hotlimit.Config{Algorithm: hotlimit.Algorithm(1 + i%3), Limit: 1 + i%50, Window: time.Second, Scope: hotlimit.Scope(i % 4)}
		_, err := svc.TakeWith(name, name, c, 1)
		require.NoError(t, err)
	}
	allowed := map[string]bool{"default": true, `users["partner"]`: true, `apis["GET /pay"]`: true,
		`apis["GET /new"]`: true, `apis["GET /v2/new"]`: true, service.OverrideRule: true}
	for _, name := range []string{"hotlimit.decisions", "hotlimit.requests"} {
		for p := range sums(t, reader)[name] {
			rule := p[strings.Index(p, "hotlimit.rule=")+len("hotlimit.rule="):]
			assert.True(t, allowed[rule], "%s: rule %q is not a rule's name", name, rule)
		}
	}
}
