package grpclimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestShadowLimitsAreNotAdvertised: a limit in shadow mode never denies, so
// its numbers must not pace clients. A rule whose every limit is in shadow
// mode (one a minute, and two a minute beside it) sends no RateLimit
// metadata, though the shadow limit is spent from the second call on; a
// rule of a limit and a shadow one advertises the limit alone. The observer
// still sees every decision.
func TestShadowLimitsAreNotAdvertised(t *testing.T) {
	one, two := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 2, time.Minute)
	one.Shadow, two.Shadow = true, true
	enforced := cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, tc := range []struct {
		rule   service.Limits
		policy []string // the ratelimit-policy metadata expected
	}{
		{service.Limits{one}, nil},
		{service.Limits{one, two}, nil},
		{service.Limits{enforced, one}, []string{`"fixedwindow-5-1m";q=5;w=60`}},
		{service.Limits{one, enforced}, []string{`"fixedwindow-5-1m";q=5;w=60`}},
	} {
		svc, err := service.NewFromRules(service.Rules{Default: tc.rule})
		require.NoError(t, err)
		var rec recorder
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
			grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))})
		client := testgrpc.NewTestServiceClient(cc)
		for i := range 3 {
			var header metadata.MD
			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
			require.NoError(t, err, "%v call %d: shadow mode never denies", tc.rule, i)
			assert.Equal(t, tc.policy, header.Get("ratelimit-policy"), "%v call %d", tc.rule, i)
			if tc.policy == nil {
				assert.Empty(t, header.Get("ratelimit"), "%v call %d", tc.rule, i)
			} else {
				assert.Len(t, header.Get("ratelimit"), 1, "%v call %d: the enforced limit's item alone", tc.rule, i)
			}
		}
		assert.Len(t, rec.all(), 3, "%v: the observer sees every decision", tc.rule)
	}
}
