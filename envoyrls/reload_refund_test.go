package envoyrls

import (
	"context"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReloadBetweenATakeAndItsRefundKeepingOrDroppingTheRule: in
// all-or-nothing mode, a request of two descriptors has taken from the
// first rule's limiter and waits inside the second's (spent) when a reload
// keeps the first rule as it is, or drops it. The second denies, and the
// first's hit goes back to the limiter that took it, once:
//
//   - kept: the new configuration uses that limiter, so the client keeps
//     its whole quota of the first rule under it;
//   - dropped: the reload closed that limiter, which a request that
//     started before still decides and gives back with, as Reload
//     documents; the first descriptor then matches no rule.
//
// (A reload that changes the first rule's limit is
// TestReloadBetweenATakeAndItsRefund.)
func TestReloadBetweenATakeAndItsRefundKeepingOrDroppingTheRule(t *testing.T) {
	const (
		first  = "  - key: first\n    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: TokenBucket}\n"
		second = "  - key: second\n    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: FixedWindow}\n"
		other  = "  - key: other\n    rate_limit: {unit: hour, requests_per_unit: 7, algorithm: GCRA}\n"
	)
	before := "domain: m\ndescriptors:\n" + first + second
	for _, tc := range []struct {
		name  string
		after string
	}{
		{"kept", "domain: m\ndescriptors:\n" + first + second + other},
		{"dropped", "domain: m\ndescriptors:\n" + second + other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := newGatedServer(t, before, WithAllOrNothing(true))
			d1, d2 := desc("first", "c"), desc("second", "c")
			require.Equal(t, ok, gs.call(t, d2).OverallCode, "spends the second rule's one request")

			gs.gate.HoldNext(hourly("FixedWindow", 1))
			held := make(chan *pb.RateLimitResponse)
			go func() {
				resp, _ := gs.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{d1, d2}})
				held <- resp
			}()
			gs.gate.Entered(t) // the first took, the second about to deny
			gs.write(t, tc.after)
			require.NoError(t, gs.srv.ReloadDir(gs.dir))
			gs.gate.Release()
			resp := <-held
			require.NotNil(t, resp)
			assert.Equal(t, over, resp.OverallCode)

			ls := gs.gate.Limiters(hourly("TokenBucket", 5))
			require.Len(t, ls, 1)
			assert.EqualValues(t, 1, ls[0].Refunded.Load(), "given back to the limiter that took, once")
			switch tc.name {
			case "kept":
				assert.False(t, ls[0].Closed.Load(), "in force: open")
				assert.Equal(t, 5, gs.passed(t, 6, d1), "the whole quota under the new configuration")
			case "dropped":
				assert.True(t, ls[0].Closed.Load(), "the reload closed it")
				assert.EqualValues(t, 1, ls[0].RefundedClosed.Load(), "given back once closed")
				st := gs.call(t, d1).Statuses[0]
				assert.Nil(t, st.CurrentLimit, "no rule limits the first descriptor any more")
			}
		})
	}
}
