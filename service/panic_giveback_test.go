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
