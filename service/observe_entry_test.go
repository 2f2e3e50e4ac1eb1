package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// lastEvent is an observer that keeps the last Event and counts them.
type lastEvent struct {
	e     hotlimit.Event
	heard int
}

func (l *lastEvent) Observe(e hotlimit.Event) { l.e, l.heard = e, l.heard+1 }

// TestEveryEntryPointReportsAsTakeDoes runs random rules (1 to 4 limits of
// random algorithms, bursts, scopes and shadow modes) through random
// requests under a stepped fake clock on two identical services: one asked
// through Take, the other through an entry point chosen at random for each
// request (Allow, Take, TakeContext, TakePolicy, TakePolicyContext,
// TakeEach). Each call must be heard exactly once, and its Event must be the
// one Take's is: rule, limit, outcome, n and Decision (Allow's carries
// Allowed, Limit and Remaining, which must match). A rule of one limit also
// runs on a third service through TakeWith and TakeWithContext under that
// limit: the same Events, under the rule name "override".
func TestEveryEntryPointReportsAsTakeDoes(t *testing.T) {
	rules, steps := 200, 100
	if testing.Short() {
		rules = 40
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	entries := []string{"Allow", "Take", "TakeContext", "TakePolicy", "TakePolicyContext", "TakeEach"}
	var used [6]int
	ctx := context.Background()
	for r := range rules {
		ls := randomRule(rng)
		if (service.Rules{Default: ls}).Validate() != nil {
			continue
		}
		var now atomic.Int64
		now.Store(int64(time.Hour))
		var ref, sut, over lastEvent
		newSvc := func(rs service.Rules, o hotlimit.Observer) *service.Service {
			s, err := service.NewFromRules(rs, hotlimit.WithClock(now.Load), hotlimit.WithObserver(o))
			require.NoError(t, err, "rule %d: %v", r, ls)
			return s
		}
		byTake := newSvc(service.Rules{Default: ls}, &ref)
		byEntry := newSvc(service.Rules{Default: ls}, &sut)
		byOverride := newSvc(service.Rules{Default: service.Limits{{Algorithm: hotlimit.Unlimited}}}, &over)
		if len(ls) == 1 {
			// TakeWith builds its limiter on first use: a report builds it
			// now, at the clock's reading the rule's was built at, so that
			// the two measure time from the same origin.
			_, err := byOverride.TakeWith("u", "a", ls[0], 0)
			require.NoError(t, err)
			over.heard = 0
		}
		for step := range steps {
			now.Add(int64(rng.IntN(300)) * int64(time.Millisecond))
			user, api := []string{"u", "v"}[rng.IntN(2)], []string{"a", "b"}[rng.IntN(2)]
			n := []int{-1, 0, 1, 1, 1, 2, 3, 7}[rng.IntN(8)]
			entry := rng.IntN(len(entries))
			if entry == 0 && n != 1 {
				entry = 1
			}
			used[entry]++
			at := fmt.Sprintf("rule %d %v step %d (%s, %s, n=%d) by %s", r, ls, step, user, api, n, entries[entry])

			want := byTake.Take(user, api, n)
			var got hotlimit.Decision
			var err error
			switch entries[entry] {
			case "Allow":
				got = hotlimit.Decision{Allowed: byEntry.Allow(user, api)}
			case "Take":
				got = byEntry.Take(user, api, n)
			case "TakeContext":
				got, err = byEntry.TakeContext(ctx, user, api, n)
			case "TakePolicy":
				got, _ = byEntry.TakePolicy(user, api, n)
			case "TakePolicyContext":
				got, _, err = byEntry.TakePolicyContext(ctx, user, api, n)
			case "TakeEach":
				var buf [4]service.LimitDecision
				got, _, err = byEntry.TakeEach(ctx, user, api, n, buf[:0])
			}
			require.NoError(t, err, at)
			require.Equal(t, step+1, ref.heard, "%s: Take heard once", at)
			require.Equal(t, step+1, sut.heard, "%s: heard once", at)
			assert.Equal(t, want.Allowed, got.Allowed, "%s: Allowed", at)
			w, g := ref.e, sut.e
			assert.Equal(t, w.Rule, g.Rule, at)
			assert.Equal(t, w.Policy, g.Policy, "%s: the Event's Policy", at)
			assert.Equal(t, w.Outcome, g.Outcome, "%s: the Event's Outcome", at)
			assert.Equal(t, w.N, g.N, at)
			if entries[entry] == "Allow" {
				assert.Equal(t, w.Decision.Allowed, g.Decision.Allowed, "%s: the Event's Allowed", at)
				assert.Equal(t, w.Decision.Limit, g.Decision.Limit, "%s: the Event's Limit", at)
				assert.Equal(t, w.Decision.Remaining, g.Decision.Remaining, "%s: the Event's Remaining", at)
			} else {
				assert.Equal(t, w.Decision, g.Decision, "%s: the Event's Decision is Take's", at)
			}

			if len(ls) == 1 {
				var od hotlimit.Decision
				if rng.IntN(2) == 0 {
					od, err = byOverride.TakeWith(user, api, ls[0], n)
				} else {
					od, err = byOverride.TakeWithContext(ctx, user, api, ls[0], n)
				}
				require.NoError(t, err, at)
				require.Equal(t, step+1, over.heard, "%s: TakeWith heard once", at)
				assert.Equal(t, want, od, "%s: TakeWith decides as the rule", at)
				o := over.e
				assert.Equal(t, service.OverrideRule, o.Rule, at)
				assert.Equal(t, w.Policy, o.Policy, "%s: TakeWith's Policy", at)
				assert.Equal(t, w.Outcome, o.Outcome, "%s: TakeWith's Outcome", at)
				assert.Equal(t, w.N, o.N, at)
				assert.Equal(t, w.Decision, o.Decision, "%s: TakeWith's Decision", at)
			}
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("entry points used: %v %v", entries, used)
}

// TestReportsAreHeardAsDecisionsOnNoRequests pins what the observer and the
// metrics packages document: a report (Take of 0) is heard of, with N 0,
// as allowed, or near the limit on a key that has nothing left, and never
// as denied; a Take of a negative n is heard of as denied. A limit in
// shadow mode beside one in force is left out of the near-limit choice.
func TestReportsAreHeardAsDecisionsOnNoRequests(t *testing.T) {
	algs := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog}
	for _, a := range algs {
		for _, shadow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/shadow=%v", a, shadow), func(t *testing.T) {
				var last lastEvent
				clock, _ := frozen(int64(time.Hour))
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Minute, Shadow: shadow}
				wide := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Hour}
				s, err := service.NewFromRules(service.Rules{Default: service.Limits{c},
					APIs: map[string]service.Limits{"two": {c, wide}}}, clock, hotlimit.WithObserver(&last))
				require.NoError(t, err)
				for _, api := range []string{"one", "two"} {
					heard := last.heard
					s.Take("u", api, 0)
					assert.Equal(t, hotlimit.OutcomeAllowed, last.e.Outcome, "%s: a fresh key", api)
					assert.Zero(t, last.e.N, api)
					s.Take("u", api, 10)
					s.Take("u", api, 1)
					s.Take("u", api, 0)
					want := hotlimit.OutcomeNearLimit
					if shadow && api == "two" {
						want = hotlimit.OutcomeAllowed // 90 of 100 left in force
					}
					assert.Equal(t, want, last.e.Outcome, "%s: nothing left", api)
					assert.True(t, last.e.Decision.Allowed, api)
					assert.Zero(t, last.e.N, api)
					s.Take("u", api, -1)
					assert.Equal(t, hotlimit.OutcomeDenied, last.e.Outcome, "%s: n < 0", api)
					assert.Equal(t, heard+5, last.heard, "%s: every call heard once", api)
				}
			})
		}
	}
}
