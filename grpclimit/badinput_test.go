package grpclimit_test

import (
	"context"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestBadInputToTheInterceptors gives the interceptors, their options,
// their key functions and the package's helpers what a careless caller
// could: no service or one New did not make, nil options, functions,
// contexts, infos, streams and invokers, and values at the ends of their
// types. Each gets its documented answer, and nothing panics.
func TestBadInputToTheInterceptors(t *testing.T) {
	bg := context.Background()
	newSvc := func(t *testing.T) *service.Service {
		svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute})
		require.NoError(t, err)
		return svc
	}
	handler := func(context.Context, any) (any, error) { return "served", nil }
	nilOpts := []grpclimit.Option{nil, grpclimit.WithAPI(nil), grpclimit.WithUser(nil), grpclimit.WithExempt(nil),
		grpclimit.WithObserver(nil), grpclimit.WithPolicyName(nil)}
	internal := func(t *testing.T, err error) {
		t.Helper()
		assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
		assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message())
	}
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"no service fails every call with Internal", func(t *testing.T) {
			for _, svc := range []*service.Service{nil, {}} {
				_, err := grpclimit.UnaryServerInterceptor(svc, nilOpts...)(bg, nil, &grpc.UnaryServerInfo{FullMethod: "/a/b"}, handler)
				internal(t, err)
				internal(t, grpclimit.StreamServerInterceptor(svc, nilOpts...)(nil, nil, &grpc.StreamServerInfo{FullMethod: "/a/b"}, nil))
				internal(t, grpclimit.UnaryClientInterceptor(svc, nilOpts...)(bg, "/a/b", nil, nil, nil, nil))
				_, err = grpclimit.StreamClientInterceptor(svc, nilOpts...)(bg, nil, nil, "/a/b", nil)
				internal(t, err)
				internal(t, grpclimit.MiddlewareLimiter(svc, nilOpts...).Limit(bg))
			}
		}},
		{"nil options are the defaults", func(t *testing.T) {
			i := grpclimit.UnaryServerInterceptor(newSvc(t), nilOpts...)
			resp, err := i(bg, nil, &grpc.UnaryServerInfo{FullMethod: "/a/b"}, handler)
			require.NoError(t, err)
			assert.Equal(t, "served", resp)
			_, err = i(bg, nil, &grpc.UnaryServerInfo{FullMethod: "/a/b"}, handler)
			assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		}},
		{"a nil info is a call of no method", func(t *testing.T) {
			resp, err := grpclimit.UnaryServerInterceptor(newSvc(t))(bg, nil, nil, handler)
			require.NoError(t, err)
			assert.Equal(t, "served", resp)
		}},
		{"a nil context or stream fails with Internal", func(t *testing.T) {
			svc := newSvc(t)
			_, err := grpclimit.UnaryServerInterceptor(svc)(nil, nil, &grpc.UnaryServerInfo{FullMethod: "/a/b"}, handler)
			internal(t, err)
			internal(t, grpclimit.StreamServerInterceptor(svc)(nil, nil, &grpc.StreamServerInfo{FullMethod: "/a/b"}, nil))
			internal(t, grpclimit.UnaryClientInterceptor(svc)(nil, "/a/b", nil, nil, nil, nil))
			_, err = grpclimit.StreamClientInterceptor(svc)(nil, nil, nil, "/a/b", nil)
			internal(t, err)
			internal(t, grpclimit.MiddlewareLimiter(svc).Limit(nil)) //lint:ignore SA1012 a nil context is what is tested
		}},
		{"a canceled call takes nothing", func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			cancel()
			i := grpclimit.UnaryServerInterceptor(newSvc(t))
			_, err := i(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/a/b"}, handler)
			assert.Equal(t, codes.Canceled, status.Code(err))
			_, err = i(bg, nil, &grpc.UnaryServerInfo{FullMethod: "/a/b"}, handler)
			assert.NoError(t, err, "the quota is whole")
		}},
		{"key functions of nothing find nothing", func(t *testing.T) {
			for name, f := range map[string]grpclimit.KeyFunc{
				"ContextValue nil": grpclimit.ContextValue(nil), "FirstOf nils": grpclimit.FirstOf(nil, nil), "FirstOf none": grpclimit.FirstOf(),
				"FromRequest nil": grpclimit.FromRequest("", nil), "Metadata empty": grpclimit.Metadata(""),
				"OutgoingMetadata not UTF-8": grpclimit.OutgoingMetadata("\xff"), "Tag nil": grpclimit.Tag("", nil),
				"Tag not UTF-8": grpclimit.Tag("\xff", grpclimit.Metadata("x")),
				"PeerIP out of range": grpclimit.PeerIP(nil, grpclimit.IPv4Prefix(math.MinInt), grpclimit.IPv6Prefix(math.MaxInt),
					grpclimit.ProxyHeader(""), grpclimit.TrustProxies(netip.Prefix{}), grpclimit.TrustNonIPPeers()),
			} {
				k, found := f(bg, "\xff", math.MaxInt)
				assert.False(t, found, name)
				assert.Empty(t, k, name)
			}
		}},
		{"a key function given a nil context panics, as its doc says", func(t *testing.T) {
			assert.Panics(t, func() { grpclimit.ContextValue("k")(nil, "/a/b", nil) })
			assert.Panics(t, func() { grpclimit.PeerIP()(nil, "/a/b", nil) })
		}},
		{"helpers at the ends of their types", func(t *testing.T) {
			k, found := grpclimit.FullMethod(nil, "\xff", nil) //lint:ignore SA1012 FullMethod reads no context
			assert.True(t, found)
			assert.Equal(t, "\xff", k)
			assert.False(t, grpclimit.HealthAndReflection(""))
			assert.NotEmpty(t, grpclimit.MetadataKey("\xff", "\x00"))
			d, ok := grpclimit.RetryDelay(hotlimit.Decision{RetryAfter: math.MaxInt64})
			assert.False(t, ok, "a Never wait is no retry")
			assert.Zero(t, d)
			d, ok = grpclimit.RetryDelay(hotlimit.Decision{RetryAfter: math.MinInt64})
			assert.True(t, ok)
			assert.Positive(t, d, "never retry now")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.NotPanics(t, func() { tc.check(t) }) })
	}
}
