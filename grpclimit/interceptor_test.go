package grpclimit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// recorder keeps the observer's events.
type recorder struct {
	mu     sync.Mutex
	events []grpclimit.Event
}

func (r *recorder) observe(e grpclimit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) last() grpclimit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[len(r.events)-1]
}

func (r *recorder) all() []grpclimit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]grpclimit.Event(nil), r.events...)
}

// details returns the RetryInfo and QuotaFailure of a status error.
func details(t *testing.T, err error) (*errdetails.RetryInfo, *errdetails.QuotaFailure) {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "a status error: %v", err)
	var ri *errdetails.RetryInfo
	var qf *errdetails.QuotaFailure
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			ri = d
		case *errdetails.QuotaFailure:
			qf = d
		}
	}
	return ri, qf
}

func TestUnaryDeniedWithRetryInfo(t *testing.T) {
	// A fixed window of 3 per second, 750 ms before the window ends: three
	// calls pass, the fourth is denied with RetryAfter 750 ms.
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 3, time.Second), 10*time.Second+250*time.Millisecond)
	var rec recorder
	ts := &testService{}
	cc := serveTCP(t, ts, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)

	for i, want := range []string{`"fixedwindow-3-1s";r=2;t=1`, `"fixedwindow-3-1s";r=1;t=1`, `"fixedwindow-3-1s";r=0;t=1`} {
		var header metadata.MD
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, []string{`"fixedwindow-3-1s";q=3;w=1`}, header.Get("ratelimit-policy"), "call %d", i)
		assert.Equal(t, []string{want}, header.Get("ratelimit"), "call %d", i)
	}
	var header, trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.EqualValues(t, 3, ts.unary.Load(), "a denied call never reaches the handler")

	denied := rec.last()
	require.False(t, denied.Decision.Allowed)
	require.Equal(t, 750*time.Millisecond, denied.Decision.RetryAfter)
	ri, qf := details(t, err)
	require.NotNil(t, ri)
	assert.Equal(t, denied.Decision.RetryAfter, ri.GetRetryDelay().AsDuration(), "RetryInfo is the limiter's RetryAfter")
	require.NotNil(t, qf)
	require.Len(t, qf.GetViolations(), 1)
	v := qf.GetViolations()[0]
	assert.Equal(t, "ip", v.GetSubject(), "the kind of the user key")
	assert.Equal(t, `policy "fixedwindow-3-1s" (3 requests per 1s)`, v.GetDescription())
	assert.Equal(t, "fixedwindow-3-1s", v.GetQuotaId())
	assert.EqualValues(t, 3, v.GetQuotaValue())
	assert.Contains(t, status.Convert(err).Message(), `rate limit of policy "fixedwindow-3-1s" (3 requests per 1s) exceeded; retry in 750ms`)
	assert.Equal(t, []string{"750"}, trailer.Get("grpc-retry-pushback-ms"))
	assert.Equal(t, []string{`"fixedwindow-3-1s";r=0;t=1`}, trailer.Get("ratelimit"), "a denial's fields are trailers")
	assert.Empty(t, header, "a denial sends no header, so the response is Trailers-Only and retryable")
	assert.Equal(t, "ip:127.0.0.1", denied.User)
	assert.Equal(t, unaryCall, denied.API)

	// A RetryAfter that is not a whole millisecond is rounded up.
	now.Store(int64(20*time.Second + 250*time.Millisecond + 400*time.Microsecond))
	for range 3 {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
	}
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	ri, _ = details(t, err)
	assert.Equal(t, 749600*time.Microsecond, rec.last().Decision.RetryAfter)
	assert.Equal(t, 750*time.Millisecond, ri.GetRetryDelay().AsDuration(), "rounded up to a millisecond")
	assert.Equal(t, []string{"750"}, trailer.Get("grpc-retry-pushback-ms"))
}

func TestRetryDelay(t *testing.T) {
	for i, tc := range []struct {
		retryAfter time.Duration
		want       time.Duration
		ok         bool
	}{
		{750 * time.Millisecond, 750 * time.Millisecond, true},
		{750*time.Millisecond + 1, 751 * time.Millisecond, true},
		{1, time.Millisecond, true},
		{0, time.Millisecond, true}, // a denial never says "retry now"
		{hotlimit.Never, 0, false},
	} {
		got, ok := grpclimit.RetryDelay(hotlimit.Decision{RetryAfter: tc.retryAfter})
		assert.Equal(t, tc.want, got, "case %d", i)
		assert.Equal(t, tc.ok, ok, "case %d", i)
	}
}

func TestLongWaitIsPushedBack(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.TokenBucket, 1, time.Hour), 0)
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
	client := testgrpc.NewTestServiceClient(cc)
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	var trailer metadata.MD
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	ri, _ := details(t, err)
	assert.Equal(t, time.Hour, ri.GetRetryDelay().AsDuration())
	assert.Equal(t, []string{"3600000"}, trailer.Get("grpc-retry-pushback-ms"))
}

// TestRetryPolicyWaitsForPushback runs a client whose service config retries
// RESOURCE_EXHAUSTED after 1 ms of its own backoff. The server denies the
// second call with a pushback of 400 ms; the client's retry must come after
// the pushback, not after its backoff, and pass. The limiter's clock is
// fake, moved by the wait at the denial, so the pushback is exactly 400 ms
// however loaded the machine; only the client's wait is real time.
func TestRetryPolicyWaitsForPushback(t *testing.T) {
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 10*time.Second+600*time.Millisecond)
	var rec recorder
	var mu sync.Mutex
	var at []time.Time // when each attempt reached the server
	observe := func(e grpclimit.Event) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		rec.observe(e)
		if !e.Decision.Allowed {
			now.Add(int64(e.Decision.RetryAfter)) // the window ends while the client waits
		}
	}
	const serviceConfig = `{"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`
	cc := serveTCP(t, &testService{},
		[]grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(observe)))},
		grpc.WithDefaultServiceConfig(serviceConfig))
	client := testgrpc.NewTestServiceClient(cc)

	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	start := time.Now()
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	elapsed := time.Since(start)
	require.NoError(t, err, "the retry after the pushback passes")

	events := rec.all()
	require.Len(t, events, 3, "the first call, the denied attempt, the retry")
	assert.True(t, events[0].Decision.Allowed)
	assert.False(t, events[1].Decision.Allowed)
	assert.True(t, events[2].Decision.Allowed)
	require.Equal(t, 400*time.Millisecond, events[1].Decision.RetryAfter)
	mu.Lock()
	gap := at[2].Sub(at[1])
	mu.Unlock()
	assert.GreaterOrEqual(t, gap, 400*time.Millisecond, "the retry waits the pushback, not the 1 ms backoff")
	assert.GreaterOrEqual(t, elapsed, 400*time.Millisecond)
	t.Logf("pushback 400ms: the retry reached the server %v after the denial; the call took %v", gap, elapsed)
}

func TestStreamLimitedAtStart(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var rec recorder
	ts := &testService{}
	cc := serveTCP(t, ts, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)

	for i := range 2 {
		stream, err := client.FullDuplexCall(ctx(t))
		require.NoError(t, err)
		for range 5 {
			require.NoError(t, stream.Send(&testgrpc.StreamingOutputCallRequest{}))
			_, err := stream.Recv()
			require.NoError(t, err, "stream %d: messages are not limited by default", i)
		}
		header, err := stream.Header()
		require.NoError(t, err)
		assert.Equal(t, []string{`"fixedwindow-2-1s";q=2;w=1`}, header.Get("ratelimit-policy"))
		require.NoError(t, stream.CloseSend())
	}
	stream, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	ri, _ := details(t, err)
	assert.Equal(t, time.Second, ri.GetRetryDelay().AsDuration())
	assert.Equal(t, []string{"1000"}, stream.Trailer().Get("grpc-retry-pushback-ms"))
	assert.EqualValues(t, 10, ts.received.Load())
	assert.Equal(t, duplexCall, rec.last().API)
}

func TestStreamMessagesLimitedByTheirOwnRule(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(hotlimit.FixedWindow, 3, time.Second)))
	var rec recorder
	ts := &testService{}
	cc := serveTCP(t, ts, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)

	stream, err := client.StreamingInputCall(ctx(t))
	require.NoError(t, err)
	for range 5 {
		if err := stream.Send(&testgrpc.StreamingInputCallRequest{}); err != nil {
			break // the server may end the stream before the client is done
		}
	}
	_, err = stream.CloseAndRecv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	ri, qf := details(t, err)
	assert.Equal(t, time.Second, ri.GetRetryDelay().AsDuration())
	assert.Equal(t, "fixedwindow-3-1s", qf.GetViolations()[0].GetQuotaId())
	assert.EqualValues(t, 3, ts.received.Load(), "three messages reach the handler, the fourth ends the stream")

	events := rec.all()
	require.Len(t, events, 5, "the start and four messages")
	assert.Equal(t, inputCall, events[0].API)
	assert.False(t, events[0].Message)
	for i, e := range events[1:] {
		assert.Equal(t, "RECV "+inputCall, e.API, "message %d", i)
		assert.True(t, e.Message, "message %d", i)
		assert.Equal(t, i < 3, e.Decision.Allowed, "message %d", i)
	}
}

func TestSpoofedForwardedForFromUntrustedPeer(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var rec recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe),
			grpclimit.WithUser(grpclimit.PeerIP(grpclimit.TrustProxies(netip.MustParsePrefix("10.0.0.0/8"))))))})
	client := testgrpc.NewTestServiceClient(cc)
	var codesGot []codes.Code
	for _, spoof := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		c := metadata.AppendToOutgoingContext(ctx(t), "x-forwarded-for", spoof)
		_, err := client.UnaryCall(c, &testgrpc.SimpleRequest{})
		codesGot = append(codesGot, status.Code(err))
		assert.Equal(t, "ip:127.0.0.1", rec.last().User, "the untrusted peer, whatever it sends")
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted}, codesGot)
}

func TestForwardedForFromTrustedProxy(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	var rec recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe),
			grpclimit.WithUser(grpclimit.PeerIP(grpclimit.TrustProxies(netip.MustParsePrefix("127.0.0.0/8"))))))})
	client := testgrpc.NewTestServiceClient(cc)
	for i, tc := range []struct {
		xff  []string
		user string
		code codes.Code
	}{
		{[]string{"6.6.6.6, 198.51.100.1"}, "ip:198.51.100.1", codes.OK}, // a prepended spoof is ignored
		{[]string{"198.51.100.2"}, "ip:198.51.100.2", codes.OK},
		{[]string{"7.7.7.7, 198.51.100.2"}, "ip:198.51.100.2", codes.ResourceExhausted},
		{[]string{"2001:db8:1:2::7, 127.0.0.5"}, "ip:2001:db8:1:2::/64", codes.OK}, // a trusted hop skipped; /64
		{nil, "ip:127.0.0.1", codes.OK},                                            // the proxy itself
	} {
		c := ctx(t)
		for _, v := range tc.xff {
			c = metadata.AppendToOutgoingContext(c, "x-forwarded-for", v)
		}
		_, err := client.UnaryCall(c, &testgrpc.SimpleRequest{})
		assert.Equal(t, tc.code, status.Code(err), "case %d", i)
		assert.Equal(t, tc.user, rec.last().User, "case %d", i)
	}
}

func TestMetadataKeysAndFallbacks(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	require.NoError(t, svc.ConfigureUser(grpclimit.MetadataKey("X-API-Key", "premium"), cfg(hotlimit.TokenBucket, 10, time.Second)))
	var rec recorder
	noAPI := func(context.Context, string, any) (string, bool) { return "", false }
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe),
			grpclimit.WithUser(grpclimit.Metadata("x-api-key")), grpclimit.WithAPI(noAPI)))})
	client := testgrpc.NewTestServiceClient(cc)

	c := metadata.AppendToOutgoingContext(ctx(t), "x-api-key", "premium")
	_, err := client.UnaryCall(c, &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	e := rec.last()
	assert.Equal(t, "header:x-api-key:premium", e.User)
	assert.Equal(t, unaryCall, e.API, "an API KeyFunc that finds none falls back to the full method")
	assert.Equal(t, "tokenbucket-10-1s", e.Policy, "the rule named by MetadataKey applies")

	// Keyless calls share one quota, the empty user's.
	var got []codes.Code
	for range 3 {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		got = append(got, status.Code(err))
		assert.Empty(t, rec.last().User)
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted}, got)
	_, qf := details(t, func() error { _, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}); return err }())
	assert.Equal(t, "none", qf.GetViolations()[0].GetSubject())
}

func TestFromRequestKey(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	var rec recorder
	bySize := grpclimit.FromRequest("size", func(req any) (string, bool) {
		r, ok := req.(*testgrpc.SimpleRequest)
		if !ok {
			return "", false
		}
		return time.Duration(r.GetResponseSize()).String(), true
	})
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe), grpclimit.WithUser(bySize)))})
	client := testgrpc.NewTestServiceClient(cc)
	for i, tc := range []struct {
		size int32
		code codes.Code
	}{{1, codes.OK}, {2, codes.OK}, {1, codes.ResourceExhausted}} {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{ResponseSize: tc.size})
		assert.Equal(t, tc.code, status.Code(err), "case %d", i)
		assert.Equal(t, "size:"+time.Duration(tc.size).String(), rec.last().User, "case %d", i)
	}
}

func TestHealthAndReflectionExempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []grpclimit.Option
		want []codes.Code
	}{
		{"default", nil, []codes.Code{codes.OK, codes.OK, codes.OK}},
		{"none", []grpclimit.Option{grpclimit.WithExempt(nil)}, []codes.Code{codes.OK, codes.ResourceExhausted, codes.ResourceExhausted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
			cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, tc.opts...))})
			var got []codes.Code
			for range 3 {
				_, err := healthpb.NewHealthClient(cc).Check(ctx(t), &healthpb.HealthCheckRequest{})
				got = append(got, status.Code(err))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.True(t, grpclimit.HealthAndReflection("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"))
	assert.True(t, grpclimit.HealthAndReflection("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"))
	assert.True(t, grpclimit.HealthAndReflection("/grpc.health.v1.Health/Watch"))
	assert.False(t, grpclimit.HealthAndReflection(unaryCall))
}

func TestDryRunNeverDenies(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	var rec recorder
	ts := &testService{}
	cc := serveBufconn(t, ts, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithDryRun(true), grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)
	for i := range 3 {
		var header metadata.MD
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, []string{`"fixedwindow-1-1s";r=0;t=1`}, header.Get("ratelimit"), "call %d", i)
		e := rec.last()
		assert.True(t, e.DryRun)
		assert.Equal(t, i == 0, e.Decision.Allowed, "call %d: the limiter still counts", i)
	}
	assert.EqualValues(t, 3, ts.unary.Load())
}

// panicky is a limiter that fails on every call.
type panicky struct{}

func (panicky) Allow(string) bool                                           { panic("backend down") }
func (panicky) Take(string, int) hotlimit.Decision                          { panic("backend down") }
func failing(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return panicky{}, nil }

func TestLimiterFailureIsAStatusNotACrash(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, hotlimit.WithFactory(failing))
	for _, dry := range []bool{false, true} {
		var rec recorder
		ts := &testService{}
		cc := serveBufconn(t, ts, []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, grpclimit.WithDryRun(dry), grpclimit.WithObserver(rec.observe))),
			grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, grpclimit.WithDryRun(dry))),
		})
		client := testgrpc.NewTestServiceClient(cc)
		for range 2 {
			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
			if dry {
				assert.NoError(t, err, "dry run lets calls through when the limiter fails")
			} else {
				assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
				assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message(), "the error stays on the server")
			}
			assert.ErrorContains(t, rec.last().Err, "backend down")
		}
		stream, err := client.FullDuplexCall(ctx(t))
		require.NoError(t, err)
		require.NoError(t, stream.CloseSend())
		_, err = stream.Recv()
		if dry {
			assert.ErrorIs(t, err, io.EOF)
		} else {
			assert.Equal(t, codes.Internal, status.Code(err))
		}
	}
	_, err := grpclimit.UnaryServerInterceptor(nil)(ctx(t), nil, &grpc.UnaryServerInfo{FullMethod: unaryCall},
		func(context.Context, any) (any, error) { return "reached", nil })
	assert.Equal(t, codes.Internal, status.Code(err), "a nil service fails closed")

	svc, _ = newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	badKey := func(context.Context, string, any) (string, bool) { panic("bad key function") }
	var rec recorder
	_, err = grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(badKey), grpclimit.WithObserver(rec.observe))(ctx(t), nil, &grpc.UnaryServerInfo{FullMethod: unaryCall},
		func(context.Context, any) (any, error) { return "reached", nil })
	assert.Equal(t, codes.Internal, status.Code(err), "a panicking key function fails the call, not the server")
	assert.ErrorContains(t, rec.last().Err, "grpclimit: a key function, the WithPolicyName function or a limiter panicked: bad key function")
}

func TestClientInterceptorLimitsTheCaller(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	ts := &testService{}
	cc := serveBufconn(t, ts, nil,
		grpc.WithChainUnaryInterceptor(grpclimit.UnaryClientInterceptor(svc)),
		grpc.WithChainStreamInterceptor(grpclimit.StreamClientInterceptor(svc)))
	client := testgrpc.NewTestServiceClient(cc)
	var got []codes.Code
	for range 3 {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		got = append(got, status.Code(err))
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted}, got)
	assert.EqualValues(t, 2, ts.unary.Load(), "a denied call never leaves the client")
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	ri, _ := details(t, err)
	assert.Equal(t, time.Second, ri.GetRetryDelay().AsDuration())

	for range 2 {
		_, err := client.FullDuplexCall(ctx(t))
		require.NoError(t, err)
	}
	_, err = client.FullDuplexCall(ctx(t))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
}

// downLimiter stands for a limiter on a backend that is down: it takes a
// context, and its failure policy passes (open) or denies (closed).
type downLimiter struct{ open bool }

var errBackendDown = errors.New("redis: connection refused")

func (l downLimiter) decision() hotlimit.Decision {
	if l.open {
		return hotlimit.Decision{Allowed: true, Limit: 1}
	}
	return hotlimit.Decision{Limit: 1, RetryAfter: time.Second}
}
func (l downLimiter) Allow(string) bool                  { return l.open }
func (l downLimiter) Take(string, int) hotlimit.Decision { return l.decision() }
func (l downLimiter) TakeContext(context.Context, string, int) (hotlimit.Decision, error) {
	return l.decision(), errBackendDown
}

// TestBackendFailureIsUnavailable: a limiter that cannot decide and whose
// failure policy denies gives codes.Unavailable, not ResourceExhausted (the
// caller spent no quota); one whose policy passes lets the call through, and
// the observer sees the error either way.
func TestBackendFailureIsUnavailable(t *testing.T) {
	for _, open := range []bool{false, true} {
		factory := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
			return downLimiter{open: open}, nil
		})
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, factory)
		var rec recorder
		_, err := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe))(ctx(t), nil, &grpc.UnaryServerInfo{FullMethod: unaryCall},
			func(context.Context, any) (any, error) { return "reached", nil })
		if open {
			assert.NoError(t, err, "fail open: the call goes on")
		} else {
			assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message(), "the error stays on the server")
		}
		assert.ErrorIs(t, rec.last().Err, errBackendDown)
		assert.True(t, rec.last().Unavailable, "the limit that decided could not")
	}
}

// An allow-listed caller (an Unlimited rule) has no quota: its metadata
// would read q=0 beside r=9223372036854775807, so none is sent.
func TestUnlimitedRuleSendsNoRateLimitMetadata(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI(unaryCall, hotlimit.Config{Algorithm: hotlimit.Unlimited}))
	var rec recorder
	ts := &testService{}
	cc := serveBufconn(t, ts, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)
	for i := range 3 {
		var header metadata.MD
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		require.NoError(t, err, "call %d", i)
		assert.Empty(t, header.Get("ratelimit"), "call %d", i)
		assert.Empty(t, header.Get("ratelimit-policy"), "call %d", i)
	}
	assert.Len(t, rec.all(), 3, "the observer still sees every decision")
	var header metadata.MD
	_, err := client.EmptyCall(ctx(t), &testgrpc.Empty{}, grpc.Header(&header))
	require.NoError(t, err)
	assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, header.Get("ratelimit-policy"), "other methods keep theirs")
}

type account struct{ id string }

func (a *account) String() string { return a.id } // dereferences: panics on nil

type acctKey struct{}

// TestContextValueOfANilPointerFindsNoKey stores a nil *account, as an
// authentication interceptor may for an anonymous caller: the key function
// finds no key, so the chain passes to the peer IP, where calling String
// would panic and fail the call with INTERNAL.
func TestContextValueOfANilPointerFindsNoKey(t *testing.T) {
	c := context.WithValue(context.Background(), acctKey{}, (*account)(nil))
	c = peer.NewContext(c, &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}})
	var key string
	var ok bool
	require.NotPanics(t, func() { key, ok = grpclimit.ContextValue(acctKey{})(c, unaryCall, nil) })
	assert.False(t, ok)
	assert.Empty(t, key)
	key, ok = grpclimit.FirstOf(grpclimit.ContextValue(acctKey{}), grpclimit.PeerIP())(c, unaryCall, nil)
	assert.True(t, ok)
	assert.Equal(t, "ip:192.0.2.1", key)

	c = context.WithValue(c, acctKey{}, &account{"a-1"})
	key, ok = grpclimit.ContextValue(acctKey{})(c, unaryCall, nil)
	assert.True(t, ok)
	assert.Equal(t, "context:grpclimit_test.acctKey:a-1", key)
}

// TestEmptyKeyIsNoKey: a key function of one's own that reports an empty
// key as found finds no key through Tag and FirstOf, as empty metadata
// does, so the chain passes to the peer IP instead of putting every such
// caller under the one key "tenant:".
func TestEmptyKeyIsNoKey(t *testing.T) {
	empty := func(context.Context, string, any) (string, bool) { return "", true }
	c := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}})
	key, ok := grpclimit.Tag("tenant", empty)(c, unaryCall, nil)
	assert.False(t, ok)
	assert.Empty(t, key)
	key, ok = grpclimit.FirstOf(grpclimit.Tag("tenant", empty), grpclimit.PeerIP())(c, unaryCall, nil)
	assert.True(t, ok)
	assert.Equal(t, "ip:192.0.2.1", key)
	key, ok = grpclimit.FirstOf(empty, grpclimit.PeerIP())(c, unaryCall, nil)
	assert.True(t, ok)
	assert.Equal(t, "ip:192.0.2.1", key)
}

// TestUserKeyFuncThatFindsNoneIsTheEmptyUser: a key function of one's own
// that finds no key (ok false) but returns text anyway, here a prefix it
// puts before the tenant entry's value, was limited under that text.
// WithUser says a call for which no key is found is limited as the empty
// user, as FirstOf ignores such text: the key is now "", and the rule of
// the empty user applies, on the server and on the client.
func TestUserKeyFuncThatFindsNoneIsTheEmptyUser(t *testing.T) {
	tenant := func(ctx context.Context, _ string, _ any) (string, bool) {
		v := metadata.ValueFromIncomingContext(ctx, "x-tenant")
		if len(v) == 0 {
			return "tenant/", false
		}
		return "tenant/" + v[0], true
	}
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureUser("", cfg(hotlimit.FixedWindow, 1, time.Second)))
	var rec recorder
	in := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(tenant), grpclimit.WithObserver(rec.observe))
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	var codesSeen []codes.Code
	for _, c := range []context.Context{context.Background(), context.Background(),
		metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-tenant", "acme"))} {
		_, err := in(c, nil, info, noop)
		codesSeen = append(codesSeen, status.Code(err))
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted, codes.OK}, codesSeen, "the keyless calls share the empty user's quota of 1")
	var users []string
	for _, e := range rec.all() {
		users = append(users, e.User)
	}
	assert.Equal(t, []string{"", "", "tenant/acme"}, users)

	client := grpclimit.UnaryClientInterceptor(svc, grpclimit.WithUser(tenant))
	invoke := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	assert.Equal(t, codes.ResourceExhausted, status.Code(client(context.Background(), unaryCall, nil, nil, nil, invoke)),
		"the client's keyless calls share the empty user's quota too")
}

// TestClientsBehindNonIPProxyHaveTheirOwnQuota serves over an in-memory
// connection, whose peer is not an IP address, as a proxy on a Unix socket
// is. Without TrustNonIPPeers every caller shares the peer's key; with it,
// each client the proxy names in x-forwarded-for has its own quota, and a
// call that names none is keyed by the peer.
func TestClientsBehindNonIPProxyHaveTheirOwnQuota(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
		var rec recorder
		var ipOpts []grpclimit.IPOption
		if trusted {
			ipOpts = append(ipOpts, grpclimit.TrustNonIPPeers())
		}
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
			grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe),
				grpclimit.WithUser(grpclimit.PeerIP(ipOpts...))))})
		client := testgrpc.NewTestServiceClient(cc)
		call := func(xff string) codes.Code {
			c := ctx(t)
			if xff != "" {
				c = metadata.AppendToOutgoingContext(c, "x-forwarded-for", xff)
			}
			_, err := client.UnaryCall(c, &testgrpc.SimpleRequest{})
			return status.Code(err)
		}
		if !trusted {
			assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted}, []codes.Code{call("198.51.100.1"), call("198.51.100.2")})
			assert.Equal(t, "peer:bufconn", rec.last().User)
			continue
		}
		got := []codes.Code{call("198.51.100.1"), call("6.6.6.6, 198.51.100.2"), call("198.51.100.2"), call("")}
		assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted, codes.OK}, got)
		var users []string
		for _, e := range rec.all() {
			users = append(users, e.User)
		}
		assert.Equal(t, []string{"ip:198.51.100.1", "ip:198.51.100.2", "ip:198.51.100.2", "peer:bufconn"}, users)
	}
}

// waitingLimiter fails as a limiter on a Redis that never answers fails
// under the caller's context: when the context ends, with its error.
type waitingLimiter struct{ downLimiter }

func (waitingLimiter) TakeContext(ctx context.Context, _ string, _ int) (hotlimit.Decision, error) {
	<-ctx.Done()
	return hotlimit.Decision{Limit: 1, RetryAfter: time.Second}, ctx.Err()
}

// TestCallersDeadlineIsNotABackendFailure: a call whose own deadline passes,
// or whose caller leaves, while its limiter waits on the backend ends with
// DeadlineExceeded or Canceled, as gRPC reports a call that ran out of time,
// not Unavailable, which would say the backend failed.
func TestCallersDeadlineIsNotABackendFailure(t *testing.T) {
	factory := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
		return waitingLimiter{}, nil
	})
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, factory)
	interceptor := grpclimit.UnaryServerInterceptor(svc)
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	handler := func(context.Context, any) (any, error) { return "reached", nil }

	deadline, cancel := context.WithTimeout(ctx(t), time.Millisecond)
	defer cancel()
	_, err := interceptor(deadline, nil, info, handler)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)

	left, leave := context.WithCancel(ctx(t))
	leave()
	_, err = interceptor(left, nil, info, handler)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
}
