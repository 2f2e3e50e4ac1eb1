package grpclimit_test

import (
	"context"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestOddPeersFindNoKeyWithoutFailing: a context whose peer is a nil
// *peer.Peer, or whose address is a nil *net.TCPAddr, as a hand-built
// context or a custom transport may give, has no client address. PeerIP
// finds no key for it, as for a context without a peer, so the call is
// limited as the keyless caller, instead of failing INTERNAL through the
// interceptor's recovery from a nil dereference.
func TestOddPeersFindNoKeyWithoutFailing(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Second), 0)
	var rec recorder
	intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe))
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	for _, p := range []*peer.Peer{nil, {Addr: (*net.TCPAddr)(nil)}, {Addr: &net.TCPAddr{}}} {
		c := peer.NewContext(context.Background(), p)
		var key string
		var found bool
		require.NotPanics(t, func() { key, found = grpclimit.PeerIP()(c, unaryCall, nil) })
		assert.False(t, found, "%v", p)
		assert.Empty(t, key, "%v", p)
		_, err := intercept(c, nil, info, handler)
		assert.NoError(t, err, "%v", p)
		assert.NoError(t, rec.last().Err, "%v", p)
		assert.Empty(t, rec.last().User, "%v", p)
	}
}

// TestNilCallInfoNeverPanics: the interceptors never panic, not even when
// called by hand without the call's info or stream. A nil info is a call of
// no method, limited as any other; a nil stream has no context to decide
// under, and fails INTERNAL without reaching the handler.
func TestNilCallInfoNeverPanics(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	var rec recorder
	unary := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe))
	stream := grpclimit.StreamServerInterceptor(svc, grpclimit.WithObserver(rec.observe))
	var served int
	unaryHandler := func(context.Context, any) (any, error) { served++; return "ok", nil }
	streamHandler := func(any, grpc.ServerStream) error { served++; return nil }

	var err error
	require.NotPanics(t, func() { _, err = unary(context.Background(), nil, nil, unaryHandler) })
	assert.NoError(t, err)
	require.NotPanics(t, func() { _, err = unary(context.Background(), nil, nil, unaryHandler) })
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v: the same quota", err)
	assert.Equal(t, "", rec.last().FullMethod)

	require.NotPanics(t, func() { err = stream(nil, nil, &grpc.StreamServerInfo{FullMethod: duplexCall}, streamHandler) })
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.NotPanics(t, func() { err = stream(nil, nil, nil, streamHandler) })
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Equal(t, 1, served)

	// Under a dry run it goes on, with the nil stream it came with.
	dry := grpclimit.StreamServerInterceptor(svc, grpclimit.WithDryRun(true), grpclimit.WithStreamMessages(true))
	var got grpc.ServerStream = canceledStream{}
	require.NotPanics(t, func() {
		err = dry(nil, nil, nil, func(_ any, ss grpc.ServerStream) error { got = ss; return nil })
	})
	assert.NoError(t, err)
	assert.Nil(t, got)
}

// TestFailedLimiterTrailers pins what the docs say a failed limiter's call
// carries, over a real connection: a backend's failure policy that denies
// gives UNAVAILABLE whose trailers carry its RetryAfter as the pushback and
// the limit's ratelimit-policy item, but no ratelimit item (its failure
// policy's numbers count nothing), with no header (Trailers-Only, so a
// retry policy listing UNAVAILABLE may retry it); a limiter that panics
// gives INTERNAL with no metadata at all.
func TestFailedLimiterTrailers(t *testing.T) {
	closed := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return downLimiter{}, nil })
	for _, tc := range []struct {
		name    string
		factory hotlimit.Option
		code    codes.Code
		want    metadata.MD
	}{
		{"closed", closed, codes.Unavailable, metadata.Pairs(
			grpclimit.MetadataPushback, "1000",
			grpclimit.MetadataPolicy, `"fixedwindow-1-1s";q=1;w=1`)},
		{"panic", hotlimit.WithFactory(failing), codes.Internal, metadata.MD{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, tc.factory)
			cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
			var header, trailer metadata.MD
			_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			assert.Empty(t, header, "Trailers-Only")
			for _, k := range []string{grpclimit.MetadataPushback, grpclimit.MetadataPolicy, grpclimit.MetadataRateLimit} {
				assert.Equal(t, tc.want.Get(k), trailer.Get(k), k)
			}
		})
	}
}

// fixedDenial is a limiter that denies every call with one RetryAfter.
type fixedDenial struct{ retry time.Duration }

func (l fixedDenial) Allow(string) bool { return false }
func (l fixedDenial) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Limit: 1, RetryAfter: l.retry}
}

// TestRetryInfoOfAnyWaitIsValidOverTheWire: whatever wait a limiter
// reports, a standard client decodes the denial's details over a real
// connection, and RetryInfo is a valid Duration that is never negative nor
// shorter than 1 ms, its pushback the same wait; a wait of
// hotlimit.Never has no RetryInfo and the pushback -1 (do not retry).
func TestRetryInfoOfAnyWaitIsValidOverTheWire(t *testing.T) {
	maxWhole := time.Duration(math.MaxInt64) / time.Millisecond * time.Millisecond
	for _, tc := range []struct {
		retry, want time.Duration
		pushback    string
	}{
		{-5 * time.Second, time.Millisecond, "1"}, // a limiter's bug never says "retry now"
		{math.MinInt64, time.Millisecond, "1"},
		{0, time.Millisecond, "1"},
		{math.MaxInt64 - 1, maxWhole, strconv.FormatInt(int64(maxWhole/time.Millisecond), 10)},
		{hotlimit.Never, 0, "-1"},
	} {
		factory := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
			return fixedDenial{tc.retry}, nil
		})
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, factory)
		cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
		var trailer metadata.MD
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
		require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v: %v", tc.retry, err)
		ri, qf := details(t, err)
		require.NotNil(t, qf, "%v", tc.retry)
		assert.Equal(t, []string{tc.pushback}, trailer.Get(grpclimit.MetadataPushback), "%v", tc.retry)
		if tc.retry == hotlimit.Never {
			assert.Nil(t, ri, "no wait helps")
			continue
		}
		require.NotNil(t, ri, "%v", tc.retry)
		require.NoError(t, ri.GetRetryDelay().CheckValid(), "%v", tc.retry)
		assert.Equal(t, tc.want, ri.GetRetryDelay().AsDuration(), "%v", tc.retry)
	}
}

// TestPanickingSelectorFailsTheCallNotTheServer: a Selector of one's own
// that panics fails its call with INTERNAL, as a panicking key function
// does, in every interceptor, instead of crashing the server (grpc-go does
// not recover a handler's panic).
func TestPanickingSelectorFailsTheCallNotTheServer(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Second), 0)
	var rec recorder
	opts := []grpclimit.Option{grpclimit.WithExempt(func(string) bool { panic("bad selector") }), grpclimit.WithObserver(rec.observe)}
	var served int
	var err error
	require.NotPanics(t, func() {
		_, err = grpclimit.UnaryServerInterceptor(svc, opts...)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: unaryCall},
			func(context.Context, any) (any, error) { served++; return "ok", nil })
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.ErrorContains(t, rec.last().Err, "bad selector")
	require.NotPanics(t, func() {
		err = grpclimit.StreamServerInterceptor(svc, opts...)(nil, canceledStream{ctx: context.Background()}, &grpc.StreamServerInfo{FullMethod: duplexCall},
			func(any, grpc.ServerStream) error { served++; return nil })
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.NotPanics(t, func() {
		err = grpclimit.UnaryClientInterceptor(svc, opts...)(context.Background(), unaryCall, nil, nil, nil,
			func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
				served++
				return nil
			})
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.NotPanics(t, func() {
		_, err = grpclimit.StreamClientInterceptor(svc, opts...)(context.Background(), &grpc.StreamDesc{}, nil, duplexCall,
			func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				served++
				return nil, nil
			})
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Zero(t, served)

	// Under a dry run the calls proceed, as with any failing limiter.
	_, err = grpclimit.UnaryServerInterceptor(svc, append(opts, grpclimit.WithDryRun(true))...)(context.Background(), nil,
		&grpc.UnaryServerInfo{FullMethod: unaryCall}, func(context.Context, any) (any, error) { served++; return "ok", nil })
	assert.NoError(t, err)
	assert.Equal(t, 1, served)
}

// TestPanickingObserverFailsTheCallNotTheServer: an observer that panics
// fails the call it was told of with INTERNAL, as a panicking key function
// or Selector does, instead of crashing the server: grpc-go does not
// recover a handler's panic. Under a dry run the call proceeds.
func TestPanickingObserverFailsTheCallNotTheServer(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Second), 0)
	bad := grpclimit.WithObserver(func(grpclimit.Event) { panic("bad observer") })
	var served int
	unaryHandler := func(context.Context, any) (any, error) { served++; return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	var err error
	require.NotPanics(t, func() {
		_, err = grpclimit.UnaryServerInterceptor(svc, bad)(context.Background(), nil, info, unaryHandler)
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.NotPanics(t, func() {
		err = grpclimit.StreamServerInterceptor(svc, bad)(nil, canceledStream{ctx: context.Background()}, &grpc.StreamServerInfo{FullMethod: duplexCall},
			func(any, grpc.ServerStream) error { served++; return nil })
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.NotPanics(t, func() {
		err = grpclimit.UnaryClientInterceptor(svc, bad)(context.Background(), unaryCall, nil, nil, nil,
			func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
				served++
				return nil
			})
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Zero(t, served)

	_, err = grpclimit.UnaryServerInterceptor(svc, bad, grpclimit.WithDryRun(true))(context.Background(), nil, info, unaryHandler)
	assert.NoError(t, err)
	assert.Equal(t, 1, served)

	// Over a real connection, the server survives and a stream whose
	// message the observer panics on ends INTERNAL.
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, bad)),
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true),
			grpclimit.WithObserver(func(e grpclimit.Event) {
				if e.Message {
					panic("bad observer")
				}
			})))})
	client := testgrpc.NewTestServiceClient(cc)
	for range 2 {
		_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	}
	in, err := client.StreamingInputCall(ctx(t))
	require.NoError(t, err)
	_ = in.Send(&testgrpc.StreamingInputCallRequest{})
	_, err = in.CloseAndRecv()
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
}

// TestPanickingPolicyNameOfAnotherLimitFailsTheCall: a WithPolicyName
// function that panics for one limit of a rule of two, the one that did not
// decide, whose name only the response metadata needs, fails the call with
// INTERNAL as for the deciding limit, instead of crashing the server.
func TestPanickingPolicyNameOfAnotherLimitFailsTheCall(t *testing.T) {
	tight, loose := cfg(hotlimit.FixedWindow, 10, time.Second), cfg(hotlimit.FixedWindow, 100, time.Second)
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{tight, loose}})
	require.NoError(t, err)
	name := grpclimit.WithPolicyName(func(c hotlimit.Config) string {
		if c == loose {
			panic("bad name")
		}
		return "tight"
	})
	var served int
	var rec recorder
	require.NotPanics(t, func() {
		_, err = grpclimit.UnaryServerInterceptor(svc, name, grpclimit.WithObserver(rec.observe))(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: unaryCall},
			func(context.Context, any) (any, error) { served++; return "ok", nil })
	})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	// The culprit is named among those the message lists.
	assert.ErrorContains(t, rec.last().Err, "grpclimit: a key function, the WithPolicyName function or a limiter panicked: bad name")
	assert.Zero(t, served)
}

// TestOwnFailuresNameThePackageAndTheCulprit: the Event.Err of a failure
// the interceptors find themselves (a panicking key function or Selector,
// a stream interceptor called without its stream, no service) starts with
// "grpclimit: " and says what failed, for a log line read without the call
// around it.
func TestOwnFailuresNameThePackageAndTheCulprit(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Second), 0)
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	for name, tc := range map[string]struct {
		svc  *service.Service
		opts []grpclimit.Option
		says string
	}{
		"key function": {svc, []grpclimit.Option{grpclimit.WithUser(func(context.Context, string, any) (string, bool) { panic("bad key") })},
			"grpclimit: a key function, the WithPolicyName function or a limiter panicked: bad key"},
		"selector": {svc, []grpclimit.Option{grpclimit.WithExempt(func(string) bool { panic("bad selector") })},
			"grpclimit: the WithExempt selector panicked: bad selector"},
		"no service": {nil, nil, "grpclimit: no service: give the interceptor one made by service.New"},
	} {
		var rec recorder
		_, err := grpclimit.UnaryServerInterceptor(tc.svc, append(tc.opts, grpclimit.WithObserver(rec.observe))...)(context.Background(), nil, info, handler)
		assert.Equal(t, codes.Internal, status.Code(err), name)
		assert.ErrorContains(t, rec.last().Err, tc.says, name)
		assert.Regexp(t, "^grpclimit: ", rec.last().Err.Error(), name)
	}
	var rec recorder
	err := grpclimit.StreamServerInterceptor(svc, grpclimit.WithObserver(rec.observe))(nil, nil, &grpc.StreamServerInfo{FullMethod: duplexCall},
		func(any, grpc.ServerStream) error { return nil })
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.EqualError(t, rec.last().Err, "grpclimit: the stream interceptor was called without a server stream")
}
