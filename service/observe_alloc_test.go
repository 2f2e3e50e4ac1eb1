package service_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestObservedDecisionsDoNotAllocate: with an observer that counts (a
// method, as the metrics packages' are), no entry point allocates per
// decision on a pair seen before, for a rule of one limit of every
// algorithm, enforced or in shadow mode, allowed or denied, and for a rule
// of several limits. The clock is frozen (see
// TestTakeEachIntoAStackBufferDoesNotAllocate).
func TestObservedDecisionsDoNotAllocate(t *testing.T) {
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	lots := 1 << 20
	algs := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog}
	rules := map[string]service.Limits{
		"unlimited": {{Algorithm: hotlimit.Unlimited}},
		"several": {
			{Algorithm: hotlimit.TokenBucket, Limit: lots, Window: time.Second},
			{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour, Scope: hotlimit.PerUser, Shadow: true},
		},
	}
	for _, a := range algs {
		limit := lots
		switch a {
		case hotlimit.SlidingLog:
			limit = 1000
		case hotlimit.SlidingCounter:
			limit = 100000
		}
		rules[fmt.Sprintf("%v allowed", a)] = service.Limits{{Algorithm: a, Limit: limit, Window: time.Second}}
		rules[fmt.Sprintf("%v denied", a)] = service.Limits{{Algorithm: a, Limit: 1, Window: time.Hour}}
		rules[fmt.Sprintf("%v shadow-denied", a)] = service.Limits{{Algorithm: a, Limit: 1, Window: time.Hour, Shadow: true}}
	}
	for name, ls := range rules {
		t.Run(name, func(t *testing.T) {
			var obs counter
			s, err := service.NewFromRules(service.Rules{Default: ls}, clock, hotlimit.WithObserver(&obs))
			require.NoError(t, err)
			ctx := context.Background()
			var buf [4]service.LimitDecision
			for entry, decide := range map[string]func(){
				"Allow":             func() { s.Allow("user", "GET /pay") },
				"Take":              func() { s.Take("user", "GET /pay", 2) },
				"TakeContext":       func() { _, _ = s.TakeContext(ctx, "user", "GET /pay", 1) },
				"TakePolicy":        func() { s.TakePolicy("user", "GET /pay", 1) },
				"TakePolicyContext": func() { _, _, _ = s.TakePolicyContext(ctx, "user", "GET /pay", 1) },
				"TakeEach":          func() { _, _, _ = s.TakeEach(ctx, "user", "GET /pay", 1, buf[:0]) },
				"report":            func() { s.Take("user", "GET /pay", 0) },
			} {
				decide()
				before := obs.n.Load()
				assert.Zero(t, testing.AllocsPerRun(100, decide), entry)
				assert.EqualValues(t, 101, obs.n.Load()-before, "%s: every decision observed once", entry)
			}
		})
	}
}
