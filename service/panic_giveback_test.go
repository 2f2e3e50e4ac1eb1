package service_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestPanickingLimitGivesBackWhatTheOthersTook: a rule of three limits whose
// second panics in its Take (its own clock, given by a factory). The panic
// reached the caller, but what the first limit had taken stayed taken: each
// recovered panic cost the key a request it never got. Now the limits that
// took the request give it back on the way out and the panic goes on with
// its own value: after one, the first limit still passes its whole quota,
// through every way of deciding.
func TestPanickingLimitGivesBackWhatTheOthersTook(t *testing.T) {
	ctx := context.Background()
	for _, call := range []struct {
		name string
		take func(*service.Service)
	}{
		{"Allow", func(s *service.Service) { s.Allow("u", "api") }},
		{"Take", func(s *service.Service) { s.Take("u", "api", 2) }},
		{"TakeContext", func(s *service.Service) { _, _ = s.TakeContext(ctx, "u", "api", 2) }},
		{"TakeEach", func(s *service.Service) { _, _, _ = s.TakeEach(ctx, "u", "api", 2, nil) }},
	} {
		t.Run("call="+call.name, func(t *testing.T) {
			var clock limitertest.PanicClock
			clock.Now.Store(int64(time.Hour))
			first := cfg(hotlimit.TokenBucket, 3)
			panicking := cfg(hotlimit.FixedWindow, 5)
			third := cfg(hotlimit.GCRA, 4)
			factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				if c == panicking {
					opts = append(opts, hotlimit.WithClock(clock.Read))
				}
				return service.NewLimiter(c, opts...)
			}
			s, err := service.NewFromRules(service.Rules{Default: service.Limits{first, panicking, third}},
				hotlimit.WithClock(clock.Now.Load), hotlimit.WithFactory(factory))
			require.NoError(t, err)

			clock.Arm(true)
			assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() { call.take(s) }),
				"the limit's panic reaches the caller unchanged")
			clock.Arm(false)

			_, each, err := s.TakeEach(ctx, "u", "api", 0, nil)
			require.NoError(t, err)
			require.Len(t, each, 3)
			for _, ld := range each {
				assert.Equal(t, ld.Config.Limit, ld.Decision.Remaining, "%v: nothing is kept of the request that panicked", ld.Config)
			}
			assert.Equal(t, 3, passes(s, "u", "api", 5), "the first limit passes its whole quota")
		})
	}
}

// TestPanickingRefundLeavesTheLimitsBeforeItGivenBack: a rule of three
// limits whose second panics in its Refund (a factory's limiter), in the
// give-back of a request that the third's panic left undecided, or that the
// third denied. The give-back stopped at the second limit, so the first,
// which had nothing wrong with it, kept a request its caller never got.
// Now the limits before a refund that panics are given back all the same,
// and the panic goes on.
func TestPanickingRefundLeavesTheLimitsBeforeItGivenBack(t *testing.T) {
	ctx := context.Background()
	for _, denied := range []bool{false, true} {
		t.Run(fmt.Sprintf("denied=%v", denied), func(t *testing.T) {
			var clock limitertest.PanicClock
			clock.Now.Store(int64(time.Hour))
			first, second := cfg(hotlimit.TokenBucket, 3), cfg(hotlimit.FixedWindow, 5)
			third := cfg(hotlimit.GCRA, 4)
			if denied {
				third = cfg(hotlimit.FixedWindow, 1)
			}
			var refunder *limitertest.PanicRefunder
			factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				if c == third {
					opts = append(opts, hotlimit.WithClock(clock.Read))
				}
				l, err := service.NewLimiter(c, opts...)
				if err == nil && c == second {
					refunder = &limitertest.PanicRefunder{Refunder: l.(hotlimit.Refunder)}
					return refunder, nil
				}
				return l, err
			}
			s, err := service.NewFromRules(service.Rules{Default: service.Limits{first, second, third}},
				hotlimit.WithClock(clock.Now.Load), hotlimit.WithFactory(factory))
			require.NoError(t, err)
			want := []int{3, 4, 4} // second keeps the request: its refund panicked
			if denied {
				require.True(t, s.Allow("u", "api"), "third holds 1")
				want = []int{2, 3, 0}
			} else {
				clock.Arm(true)
			}
			refunder.Arm(true)
			assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() { s.Take("u", "api", 1) }))
			refunder.Arm(false)
			clock.Arm(false)

			_, each, err := s.TakeEach(ctx, "u", "api", 0, nil)
			require.NoError(t, err)
			got := map[hotlimit.Config]int{}
			for _, ld := range each {
				got[ld.Config] = ld.Decision.Remaining
			}
			assert.Equal(t, want[0], got[first], "the first limit was given back")
			assert.Equal(t, want[1], got[second])
			assert.Equal(t, want[2], got[third])
		})
	}
}

// TestPanickingObserverLeavesTheRequestCounted: the observer hears of a
// request once every limit decided it, so a panic of the observer's goes
// to the caller with the request counted by every limit, as the package
// documentation says.
func TestPanickingObserverLeavesTheRequestCounted(t *testing.T) {
	var armed atomic.Bool
	obs := hotlimit.ObserverFunc(func(hotlimit.Event) {
		if armed.Load() {
			panic(limitertest.PanicValue)
		}
	})
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{cfg(hotlimit.TokenBucket, 3), cfg(hotlimit.FixedWindow, 5)}},
		clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	armed.Store(true)
	assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() { s.Take("u", "api", 2) }))
	armed.Store(false)
	_, each, err := s.TakeEach(context.Background(), "u", "api", 0, nil)
	require.NoError(t, err)
	for _, ld := range each {
		assert.Equal(t, ld.Config.Limit-2, ld.Decision.Remaining, "%v counts the request", ld.Config)
	}
}
