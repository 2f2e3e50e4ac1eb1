package envoyrls

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestAllOrNothingPanicGivesBackWhatTheDescriptorsTook: with
// WithAllOrNothing, a request of two descriptors whose observer panics on
// the second one's decision. The panic left the server, but both
// descriptors kept the hits they had taken for a request never answered:
// behind a recovering interceptor, each such request spent quota. Now what
// they took is given back on the way out and the panic goes on with its own
// value, as a denial's give-back does.
func TestAllOrNothingPanicGivesBackWhatTheDescriptorsTook(t *testing.T) {
	var armed atomic.Bool
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) {
		if armed.Load() && strings.HasSuffix(e.Source.Rule, "two_b") {
			panic(limitertest.PanicValue)
		}
	})
	h := inProcess(t, WithAllOrNothing(true), WithObserver(obs))
	a, b := desc("two_a", "p"), desc("two_b", "p")

	armed.Store(true)
	req := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{a, b}}
	assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() {
		_, _ = h.srv.ShouldRateLimit(context.Background(), req)
	}), "the observer's panic goes on unchanged")
	armed.Store(false)

	resp := h.call(t, "conf", 0, a, b)
	require.Equal(t, ok, resp.OverallCode)
	assert.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining, "two_a kept nothing of the request that panicked")
	assert.Equal(t, uint32(1), resp.Statuses[1].LimitRemaining, "nor did two_b")
}

// TestAllOrNothingPanickingRefundLeavesTheOthersGivenBack: with
// WithAllOrNothing, a request of three descriptors whose first one's
// limiter (a factory's) panics in its Refund, in the give-back of a
// request the observer's panic on the third left unanswered, or that the
// third denied. The give-back stopped at the first descriptor, so the
// second, with nothing wrong with it, kept a hit for a request that spent
// nothing. Now the descriptors after a refund that panics are given back
// all the same, and the panic goes on.
func TestAllOrNothingPanickingRefundLeavesTheOthersGivenBack(t *testing.T) {
	for _, denied := range []bool{false, true} {
		t.Run(fmt.Sprintf("denied=%v", denied), func(t *testing.T) {
			var refunder *limitertest.PanicRefunder
			factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				l, err := service.NewLimiter(c, opts...)
				if err == nil && c.Limit == 5 && c.Window == time.Hour { // two_a's
					refunder = &limitertest.PanicRefunder{Refunder: l.(hotlimit.Refunder)}
					return refunder, nil
				}
				return l, err
			}
			var armed atomic.Bool
			obs := hotlimit.ObserverFunc(func(e hotlimit.Event) {
				if armed.Load() && strings.HasSuffix(e.Source.Rule, "two_b") {
					panic(limitertest.PanicValue)
				}
			})
			h := inProcess(t, WithAllOrNothing(true), WithObserver(obs), WithLimiterOptions(hotlimit.WithFactory(factory)))
			a, p, b := desc("two_a", "r"), desc("per_hour", "r"), desc("two_b", "r")
			if denied {
				h.call(t, "conf", 2, b) // two_b holds none
			} else {
				armed.Store(true)
			}
			refunder.Arm(true)
			req := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{a, p, b}}
			assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() {
				_, _ = h.srv.ShouldRateLimit(context.Background(), req)
			}), "the refund's panic goes on")
			refunder.Arm(false)
			armed.Store(false)

			resp := h.call(t, "conf", 0, a, p) // one hit each
			require.Equal(t, ok, resp.OverallCode)
			assert.Equal(t, uint32(3), resp.Statuses[0].LimitRemaining, "two_a kept the hit: its refund panicked")
			assert.Equal(t, uint32(2), resp.Statuses[1].LimitRemaining, "per_hour was given back")
		})
	}
}

// TestAllOrNothingClockPanicBeforeTheAnswerGivesBack: with
// WithAllOrNothing, a request of two descriptors whose clock panics once,
// once both are decided, as the response reads it for their resets. The
// panic left the server with the hits taken, even when the second
// descriptor was over its limit, whose give-back came after that reading:
// a request never answered spent them. Now the clock is read while a panic
// still gives the hits back.
func TestAllOrNothingClockPanicBeforeTheAnswerGivesBack(t *testing.T) {
	for _, denied := range []bool{false, true} {
		t.Run(fmt.Sprintf("denied=%v", denied), func(t *testing.T) {
			var now atomic.Int64
			now.Store(t0)
			var panicNext, armed atomic.Bool
			clock := func() int64 {
				if panicNext.CompareAndSwap(true, false) { // once
					panic(limitertest.PanicValue)
				}
				return now.Load()
			}
			obs := hotlimit.ObserverFunc(func(e hotlimit.Event) {
				if armed.Load() && strings.HasSuffix(e.Source.Rule, "two_b") {
					panicNext.Store(true) // the next reading is the response's
				}
			})
			h := inProcess(t, WithAllOrNothing(true), WithObserver(obs), WithClock(clock))
			a, b := desc("two_a", "c"), desc("two_b", "c")
			if denied {
				h.call(t, "conf", 2, b) // two_b holds none
			}
			armed.Store(true)
			req := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{a, b}}
			assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() {
				_, _ = h.srv.ShouldRateLimit(context.Background(), req)
			}), "the clock's panic goes on")
			armed.Store(false)

			resp := h.call(t, "conf", 0, a) // one hit
			assert.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining, "two_a kept nothing of the request that panicked")
		})
	}
}
