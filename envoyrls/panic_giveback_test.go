package envoyrls

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
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
