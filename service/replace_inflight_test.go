package service_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestReplaceDuringADecision holds an Allow inside its limiter while a
// Replace lands, then lets it count, under a frozen clock and a limit of 1.
// The decision is made under the rules it started with, and where it counts
// is what the new rules say of its limit:
//
//   - unchanged: the new rules use the same limiter, so its request is
//     counted there, and the pair stays at its limit under the new rules;
//   - shadowed: the new rules put the limit in shadow mode, which shares its
//     limiter: the pair is still at its limit (Take says so, and the observer
//     hears a shadow denial), the caller passes, and turning shadow mode off
//     again denies;
//   - dropped: the new rules no longer use the limit: its limiter goes with
//     the request it counted, as Replace documents, and a later rule set
//     naming the limit again starts it afresh.
func TestReplaceDuringADecision(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	shadowX := x
	shadowX.Shadow = true
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute}
	a := service.Rules{Default: one(x)}
	for _, tc := range []struct {
		name string
		b    service.Rules
	}{
		{"unchanged", service.Rules{Default: one(x), APIs: map[string]service.Limits{"other": one(y)}}},
		{"shadowed", service.Rules{Default: one(shadowX)}},
		{"dropped", service.Rules{Default: one(y)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := limitertest.NewGate(service.NewLimiter)
			var shadowDenials atomic.Int64
			clock, _ := frozen(int64(time.Hour))
			obs := hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) {
				if e.Outcome == hotlimit.OutcomeShadowDenied {
					shadowDenials.Add(1)
				}
			}))
			s, err := service.NewFromRules(a, clock, hotlimit.WithFactory(g.Factory), obs)
			require.NoError(t, err)

			g.HoldNext(x)
			passed := make(chan bool)
			go func() { passed <- s.Allow("u", "e") }()
			g.Entered(t) // chose a's limiter, not yet counted
			require.NoError(t, s.Replace(tc.b))
			g.Release()
			assert.True(t, <-passed, "the held decision passes: the first request under a")

			switch tc.name {
			case "unchanged":
				assert.False(t, s.Allow("u", "e"), "the held request counts under the new rules")
				assert.Len(t, g.Limiters(x), 1, "one limiter for x across the Replace")
			case "shadowed":
				d := s.Take("u", "e", 1)
				assert.True(t, d.Allowed, "shadow mode lets it pass")
				assert.Zero(t, d.Remaining, "at its limit")
				assert.EqualValues(t, 1, shadowDenials.Load(), "the observer hears the would-be denial")
				require.NoError(t, s.Replace(a))
				assert.False(t, s.Allow("u", "e"), "out of shadow mode, still at its limit")
				assert.Len(t, g.Limiters(x), 1, "shadow mode shares x's limiter")
			case "dropped":
				assert.Equal(t, 5, passes(s, "u", "e", 10), "y's own quota")
				require.NoError(t, s.Replace(a))
				assert.Len(t, g.Limiters(x), 2, "x was dropped, then built afresh")
				assert.Equal(t, 1, passes(s, "u", "e", 5), "a fresh x")
			}
		})
	}
}

// TestReplaceBetweenATakeAndItsRefund: under a rule of two limits, the first
// has taken and the second is about to deny when a Replace drops the second
// and keeps the first. The denial's refund must reach the first limit's
// limiter, the one the new rules use, exactly: afterwards the pair passes
// all of the first limit under the new rules.
func TestReplaceBetweenATakeAndItsRefund(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
	a := service.Rules{Default: service.Limits{x, y}}
	b := service.Rules{Default: one(x)}
	g := limitertest.NewGate(service.NewLimiter)
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(a, clock, hotlimit.WithFactory(g.Factory))
	require.NoError(t, err)
	require.True(t, s.Allow("u", "other"), "spends the user's one request of y")

	g.HoldNext(y) // x, asked first, takes; y waits
	denied := make(chan hotlimit.Decision)
	go func() { denied <- s.Take("u", "e", 1) }()
	g.Entered(t) // x took, y about to decide
	require.NoError(t, s.Replace(b))
	g.Release()
	d := <-denied
	assert.False(t, d.Allowed, "y denies under a")
	assert.Equal(t, 2, passes(s, "u", "e", 5), "x got its request back, in the limiter b uses")
	assert.Len(t, g.Limiters(x), 1)
}

// TestReplaceBetweenATakeAndItsRefundToADroppedLimit: under a rule of two
// limits, the first has taken and the second is about to deny when a
// Replace changes the first limit (its limiter is dropped) and the pair
// takes under the new one. The denial's refund must reach the limiter
// that took, not the new rule's: the new limit's count stays as the new
// rules' own requests left it.
func TestReplaceBetweenATakeAndItsRefundToADroppedLimit(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	x2 := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute}
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
	a := service.Rules{Default: service.Limits{x, y}}
	b := service.Rules{Default: one(x2)}
	g := limitertest.NewGate(service.NewLimiter)
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(a, clock, hotlimit.WithFactory(g.Factory))
	require.NoError(t, err)
	require.True(t, s.Allow("u", "other"), "spends the user's one request of y")

	g.HoldNext(y) // x, asked first, takes; y waits
	denied := make(chan hotlimit.Decision)
	go func() { denied <- s.Take("u", "e", 1) }()
	g.Entered(t) // x took, y about to decide
	require.NoError(t, s.Replace(b))
	require.True(t, s.Allow("u", "e"), "one of x2's 3")
	g.Release()
	d := <-denied
	assert.False(t, d.Allowed, "y denies under a")
	assert.EqualValues(t, 1, g.Only(t, x).Refunded.Load(), "given back to the limiter that took")
	assert.Zero(t, g.Only(t, x2).Refunded.Load(), "nothing given to the new one")
	assert.Equal(t, 2, passes(s, "u", "e", 5), "x2's last 2: the refund created nothing there")
}
