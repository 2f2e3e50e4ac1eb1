package grpclimit_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestSeveralLimitsMetadataDescribesOnePolicy: a rule of a token bucket
// with a burst and a fixed window behind the unary interceptor. Once the
// window's share of its quota fell below the bucket's, the window decided
// and ratelimit-policy advertised it (q=100), while ratelimit carried the
// bucket's remaining count and the rule's largest reset. Now each
// ratelimit value names the policy of the ratelimit-policy value in its
// place, with its own q, r and t as a sequential model of each limit
// computes them, the deciding policy first: in the header of a call that
// passes, in the trailer of one denied, whose retry pushback is the denying
// limit's wait.
func TestSeveralLimitsMetadataDescribesOnePolicy(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour)) // a minute boundary: the model's windows
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{limitertest.BurstyBucket, limitertest.MinuteWindow}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	name := func(c hotlimit.Config) string {
		if c.Algorithm == hotlimit.TokenBucket {
			return "bucket"
		}
		return "window"
	}
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithPolicyName(name)))})
	client := testgrpc.NewTestServiceClient(cc)
	names := [2]string{`"bucket"`, `"window"`}
	m := limitertest.NewPairModel()
	windowDecided := 0
	// How many calls arrive in each second: the bucket denies in second 2,
	// the window's share falls below the bucket's from second 5 (while the
	// bucket's Remaining stays the smaller), the window denies from second 8.
	for sec, calls := range limitertest.PairScript {
		now.Store(int64(time.Hour) + int64(sec)*int64(time.Second))
		for call := range calls {
			step := m.Take(sec)
			allowed, decider, retry := step.Allowed, step.Decider, step.RetryAfter
			var header, trailer metadata.MD
			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
			md := header
			if allowed {
				require.NoError(t, err, "second %d call %d", sec, call)
			} else {
				require.Equal(t, codes.ResourceExhausted, status.Code(err), "second %d call %d: %v", sec, call, err)
				assert.Equal(t, []string{strconv.FormatInt(retry.Milliseconds(), 10)}, trailer.Get("grpc-retry-pushback-ms"),
					"second %d call %d", sec, call)
				md = trailer
			}
			limitertest.CheckPairItems(t, md.Get(grpclimit.MetadataPolicy), md.Get(grpclimit.MetadataRateLimit), names, step, fmt.Sprintf("second %d call %d", sec, call))
			if decider == 1 && allowed {
				windowDecided++
			}
		}
	}
	assert.Positive(t, windowDecided, "the window decides some calls that pass")
}

// TestSeveralLimitsOfOneNameButScopeListDistinctPolicies: a rule of two
// limits that differ only in their scope, ten a minute per pair and ten a
// minute per user, whose ratelimit-policy values shared one name. Now the
// one per user is named with its scope, in every call whichever limit
// decides, and each ratelimit value names a ratelimit-policy value of the
// call, once, with that limit's own remaining count.
func TestSeveralLimitsOfOneNameButScopeListDistinctPolicies(t *testing.T) {
	pair := cfg(hotlimit.FixedWindow, 10, time.Minute)
	user := pair
	user.Scope = hotlimit.PerUser
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{pair, user}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
	client := testgrpc.NewTestServiceClient(cc)
	pairName, userName := `"fixedwindow-10-1m"`, `"fixedwindow-10-1m-user"`
	// The caller spends 4 of its 10 on another method: its own limit then
	// holds less than the pair's, and decides.
	for range 4 {
		_, err := client.EmptyCall(ctx(t), &testgrpc.Empty{})
		require.NoError(t, err)
	}
	for call := range 8 {
		var header, trailer metadata.MD
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
		md := header
		// 6 left: calls 0 to 5 pass and count under both limits.
		if call < 6 {
			require.NoError(t, err, "call %d", call)
		} else {
			require.Equal(t, codes.ResourceExhausted, status.Code(err), "call %d: %v", call, err)
			md = trailer
		}
		policies, limits := md.Get(grpclimit.MetadataPolicy), md.Get(grpclimit.MetadataRateLimit)
		require.Len(t, policies, 2, "call %d", call)
		require.Len(t, limits, 2, "call %d", call)
		names, remaining := map[string]bool{}, map[string]string{}
		for _, v := range policies {
			m := limitertest.PolicyItem.FindStringSubmatch(v)
			require.NotNil(t, m, "call %d: %q", call, v)
			names[m[1]] = true
		}
		for _, v := range limits {
			m := limitertest.LimitItem.FindStringSubmatch(v)
			require.NotNil(t, m, "call %d: %q", call, v)
			assert.True(t, names[m[1]], "call %d: %s names a listed policy", call, m[1])
			remaining[m[1]] = m[2]
		}
		assert.Equal(t, map[string]bool{pairName: true, userName: true}, names, "call %d: one policy each, under names that stay", call)
		assert.Equal(t, map[string]string{pairName: strconv.Itoa(10 - min(call+1, 6)), userName: strconv.Itoa(max(5-call, 0))}, remaining,
			"call %d: each limit's own remaining count", call)
	}
}

// TestScopedNameOfAnEmptyPolicyNameFallsBackToTheDefault: WithPolicyName's
// empty name falls back to the default name, under a rule of two limits
// that differ only in their scope too, where the one per user is named
// with its scope: "fixedwindow-10-1m-user", not "-user".
func TestScopedNameOfAnEmptyPolicyNameFallsBackToTheDefault(t *testing.T) {
	pair := cfg(hotlimit.FixedWindow, 10, time.Minute)
	user := pair
	user.Scope = hotlimit.PerUser
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{pair, user}})
	require.NoError(t, err)
	empty := grpclimit.WithPolicyName(func(hotlimit.Config) string { return "" })
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, empty))})
	var header metadata.MD
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{`"fixedwindow-10-1m";q=10;w=60`, `"fixedwindow-10-1m-user";q=10;w=60`}, header.Get(grpclimit.MetadataPolicy))
}
