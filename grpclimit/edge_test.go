package grpclimit_test

import (
	"context"
	"math"
	"net"
	"sync/atomic"
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
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestBurstQuotaValueIsTheAdvertisedQuota: a token bucket of 5 per second
// with a burst of 20 passes 20 calls at once and advertises q=20. The
// QuotaFailure of the denial that follows must say the same quota, 20, and
// its description the burst, or a client reading both is told two limits.
func TestBurstQuotaValueIsTheAdvertisedQuota(t *testing.T) {
	c := cfg(hotlimit.TokenBucket, 5, time.Second)
	c.Burst = 20
	svc, _ := newService(t, c, 0)
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
	client := testgrpc.NewTestServiceClient(cc)
	for i := range 20 {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		require.NoError(t, err, "call %d of the burst", i)
	}
	var trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Equal(t, []string{`"tokenbucket-5-1s-burst20";q=20;w=4`}, trailer.Get(grpclimit.MetadataPolicy))
	_, qf := details(t, err)
	require.NotNil(t, qf)
	require.Len(t, qf.GetViolations(), 1)
	v := qf.GetViolations()[0]
	assert.EqualValues(t, 20, v.GetQuotaValue(), "the q of ratelimit-policy")
	assert.Equal(t, `policy "tokenbucket-5-1s-burst20" (5 requests per 1s, bursts of 20)`, v.GetDescription())
	assert.Contains(t, status.Convert(err).Message(), "(5 requests per 1s, bursts of 20) exceeded")
}

// TestEndedCallSpendsNoQuota: a call whose context has already ended (its
// caller left, its deadline passed) reaches the interceptor. It must fail
// with its context's status, never reach the handler, and take nothing: the
// next call, on a quota of one, still passes.
func TestEndedCallSpendsNoQuota(t *testing.T) {
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	peerCtx := func(ctx context.Context) context.Context {
		return peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}})
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		code codes.Code
	}{{"canceled", canceled, codes.Canceled}, {"deadline", expired, codes.DeadlineExceeded}} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			var rec recorder
			intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe))
			var served int
			handler := func(context.Context, any) (any, error) { served++; return "ok", nil }
			info := &grpc.UnaryServerInfo{FullMethod: unaryCall}

			_, err := intercept(peerCtx(tc.ctx), nil, info, handler)
			assert.Equal(t, tc.code, status.Code(err), "%v", err)
			assert.Zero(t, served, "an ended call is not served")
			ev := rec.last()
			assert.ErrorIs(t, ev.Err, tc.ctx.Err())
			assert.False(t, ev.Decision.Allowed)

			_, err = intercept(peerCtx(context.Background()), nil, info, handler)
			assert.NoError(t, err, "the ended call took nothing")
			assert.Equal(t, 1, served)
		})
	}
}

// endedBeside makes one call through svc's unary interceptor, then one
// whose context has ended, from the same peer, and returns the events of
// both, and call, which makes one more call under ctx and returns its
// event.
func endedBeside(t *testing.T, svc *service.Service) (decided, ended grpclimit.Event, call func(ctx context.Context) (grpclimit.Event, error)) {
	t.Helper()
	var rec recorder
	intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe))
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	call = func(ctx context.Context) (grpclimit.Event, error) {
		ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}})
		_, err := intercept(ctx, nil, info, handler)
		return rec.last(), err
	}
	decided, err := call(context.Background())
	require.NoError(t, err)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ended, err = call(gone)
	require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	return decided, ended, call
}

// TestEndedCallNamesThePolicyOthersDo: under the service's burst
// (hotlimit.WithBurst), a call that ended before its decision is reported
// under the same Config and policy name as the calls that were decided, the
// service's burst spelled out, not the limit as the rules give it.
func TestEndedCallNamesThePolicyOthersDo(t *testing.T) {
	svc, err := service.New(cfg(hotlimit.TokenBucket, 10, time.Minute), hotlimit.WithBurst(4))
	require.NoError(t, err)
	decided, ev, _ := endedBeside(t, svc)
	assert.Equal(t, 4, decided.Config.Burst, "a decided call: the service's burst")
	assert.Equal(t, decided.Config, ev.Config, "the ended call names the same limit")
	assert.Equal(t, decided.Policy, ev.Policy)
}

// TestEndedCallReportsTheLimitOthersDo: a call that ended before its
// decision reports the Decision.Limit of the decided calls: the rule's
// limit, and math.MaxInt under an allow-list rule (Unlimited), whose Config
// has no Limit.
func TestEndedCallReportsTheLimitOthersDo(t *testing.T) {
	for _, c := range []hotlimit.Config{cfg(hotlimit.TokenBucket, 10, time.Minute), {Algorithm: hotlimit.Unlimited}} {
		svc, err := service.New(c)
		require.NoError(t, err)
		decided, ended, _ := endedBeside(t, svc)
		assert.Equal(t, decided.Decision.Limit, ended.Decision.Limit, "%v", c)
		assert.False(t, ended.Decision.Allowed, "%v", c)
		assert.Zero(t, ended.Decision.Remaining, "%v", c)
	}
}

// TestEndedCallNamesNoShadowLimit: under a rule whose first limit is in
// shadow mode, a call that ended before its decision names the limit the
// decided calls name, the first one enforced, not the shadow limit, which
// no decided call names.
func TestEndedCallNamesNoShadowLimit(t *testing.T) {
	shadow := cfg(hotlimit.FixedWindow, 2, time.Minute)
	shadow.Shadow = true
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{shadow, cfg(hotlimit.TokenBucket, 10, time.Minute)}})
	require.NoError(t, err)
	decided, ev, _ := endedBeside(t, svc)
	assert.False(t, decided.Config.Shadow, "a decided call: the limit enforced")
	assert.Equal(t, decided.Config, ev.Config, "the ended call names the same limit")
	assert.Equal(t, decided.Policy, ev.Policy)
}

// TestEndedCallNamesItsLimitAmongTheRules: under a rule of two limits that
// differ only in scope, the decided calls name the per-user one with its
// scope ("fixedwindow-10-1m-user"), as their metadata does; a call that
// ended, before its decision or while a limiter that could not decide was
// asked, names it so too, not by the name of the other limit.
func TestEndedCallNamesItsLimitAmongTheRules(t *testing.T) {
	user := cfg(hotlimit.FixedWindow, 10, time.Minute)
	user.Scope = hotlimit.PerUser
	rules := service.Rules{Default: service.Limits{user, cfg(hotlimit.FixedWindow, 10, time.Minute)}}
	lim := &limitertest.CancelingRefunder{}
	svc, err := service.NewFromRules(rules,
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
	require.NoError(t, err)
	decided, before, call := endedBeside(t, svc)
	require.Equal(t, user, decided.Config)
	require.Equal(t, "fixedwindow-10-1m-user", decided.Policy)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim.Cancel = cancel
	during, err := call(ctx)
	require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	for when, ev := range map[string]grpclimit.Event{"before its decision": before, "during its decision": during} {
		require.Error(t, ev.Err, when)
		assert.Equal(t, decided.Config, ev.Config, when)
		assert.Equal(t, decided.Policy, ev.Policy, when)
	}
}

// TestFailOpenPassOfAnEndedCallIsNotServed: a caller cancels its call while
// the interceptor asks a limiter that cannot decide. The failing-open
// policy passes it; running the handler would serve a call no limiter
// counted, so a caller could reach it without limit by cancelling each call
// at once.
func TestFailOpenPassOfAnEndedCallIsNotServed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := &limitertest.CancelingLimiter{Cancel: cancel}
	svc, err := service.New(cfg(hotlimit.FixedWindow, 1, time.Second),
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
	require.NoError(t, err)
	var served int
	handler := func(context.Context, any) (any, error) { served++; return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	_, err = grpclimit.UnaryServerInterceptor(svc)(ctx, nil, info, handler)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	assert.Zero(t, served)

	// Under a dry run it proceeds, as every call does.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	lim.Cancel = cancel2
	_, err = grpclimit.UnaryServerInterceptor(svc, grpclimit.WithDryRun(true))(ctx2, nil, info, handler)
	assert.NoError(t, err)
	assert.Error(t, ctx2.Err(), "the call ended while the limiter was asked")
	assert.Equal(t, 1, served)
}

// TestRetryDelayOfHugeWaitsNeverSaysRetryNow: rounding a wait up to the
// millisecond must not overflow for waits near the largest Duration, which
// would tell a denied client to retry in 1 ms; and no wait is made shorter
// than the limiter's, except the clamp to the largest whole millisecond.
func TestRetryDelayOfHugeWaitsNeverSaysRetryNow(t *testing.T) {
	maxWhole := time.Duration(math.MaxInt64) / time.Millisecond * time.Millisecond
	for _, wait := range []time.Duration{
		1, time.Millisecond - 1, time.Millisecond, time.Millisecond + 1, 750 * time.Millisecond,
		math.MaxInt64 / 2, maxWhole - 1, maxWhole, maxWhole + 1, math.MaxInt64 - 1,
	} {
		delay, ok := grpclimit.RetryDelay(hotlimit.Decision{RetryAfter: wait})
		require.True(t, ok, "%d", wait)
		assert.Zero(t, delay%time.Millisecond, "%d: whole milliseconds", wait)
		assert.GreaterOrEqual(t, delay, min(wait, maxWhole), "%d: never earlier than the limiter's wait", wait)
		assert.Less(t, delay-wait, time.Millisecond, "%d: rounded up by less than 1 ms", wait)
		assert.GreaterOrEqual(t, delay, time.Millisecond, "%d", wait)
	}
	_, ok := grpclimit.RetryDelay(hotlimit.Decision{RetryAfter: hotlimit.Never})
	assert.False(t, ok)
}

// TestEndedCallGivesBackTheMemoryLimitsTake: a rule of two limits, one in
// memory (one call a minute) and one on a backend that cannot decide while
// the caller cancels, and fails open. The memory limit counted the call
// before it ended; the call is then not served, so that count must be given
// back: the caller's next call passes.
func TestEndedCallGivesBackTheMemoryLimitsTake(t *testing.T) {
	remote := &limitertest.CancelingRefunder{}
	memory, onBackend := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, order := range []service.Limits{{memory, onBackend}, {onBackend, memory}} {
		svc, err := service.NewFromRules(service.Rules{Default: order},
			limitertest.OnBackend(onBackend, remote, service.NewLimiter))
		require.NoError(t, err)
		var served int
		handler := func(context.Context, any) (any, error) { served++; return "ok", nil }
		info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
		intercept := grpclimit.UnaryServerInterceptor(svc)

		ctx, cancel := context.WithCancel(context.Background())
		remote.Cancel = cancel
		_, err = intercept(ctx, nil, info, handler)
		assert.Equal(t, codes.Canceled, status.Code(err), "%v: %v", order, err)
		assert.Zero(t, served, "%v: an ended call is not served", order)

		remote.Cancel = nil
		_, err = intercept(context.Background(), nil, info, handler)
		assert.NoError(t, err, "%v: the ended call took nothing", order)
		_, err = intercept(context.Background(), nil, info, handler)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v: the served one did", order)
		assert.Equal(t, 1, served, "%v", order)
	}
}

// TestEndedCallUnderFailClosedCarriesNoMetadata: a caller cancels its call
// while a limit on a backend that fails closed is asked, alone or beside a
// limit in memory. The call fails Canceled and, as under a policy that
// fails open, carries no ratelimit metadata: no limiter decided, and the
// failure policy's numbers (no quota left on the backend's limit) described
// nothing. Nothing is counted: the next call passes the limit of one in
// memory.
func TestEndedCallUnderFailClosedCarriesNoMetadata(t *testing.T) {
	memory, onBackend := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{onBackend}, {memory, onBackend}, {onBackend, memory}} {
		remote := &limitertest.CancelingRefunder{Closed: true}
		svc, err := service.NewFromRules(service.Rules{Default: rule},
			limitertest.OnBackend(onBackend, remote, service.NewLimiter))
		require.NoError(t, err)
		var served int
		handler := func(context.Context, any) (any, error) { served++; return "ok", nil }
		info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
		var events []grpclimit.Event
		intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(func(e grpclimit.Event) { events = append(events, e) }))

		ctx, cancel := context.WithCancel(context.Background())
		remote.Cancel = cancel
		stream := &recordingStream{}
		_, err = intercept(grpc.NewContextWithServerTransportStream(ctx, stream), nil, info, handler)
		assert.Equal(t, codes.Canceled, status.Code(err), "%v: %v", rule, err)
		assert.Zero(t, served, "%v", rule)
		assert.Empty(t, stream.md.Get(grpclimit.MetadataRateLimit), "%v", rule)
		assert.Empty(t, stream.md.Get(grpclimit.MetadataPolicy), "%v", rule)
		require.Len(t, events, 1, "%v", rule)
		assert.ErrorIs(t, events[0].Err, context.Canceled, "%v", rule)
		assert.False(t, events[0].Unavailable, "%v: the call ended; no status of the limiter's", rule)

		if len(rule) > 1 {
			remote.Cancel = nil
			_, err = intercept(context.Background(), nil, info, handler)
			assert.NoError(t, err, "%v: the ended call took nothing", rule)
		}
	}
}

// recordingStream is a grpc.ServerTransportStream that keeps the metadata
// set on it, headers and trailers together.
type recordingStream struct{ md metadata.MD }

func (s *recordingStream) Method() string { return unaryCall }
func (s *recordingStream) SetHeader(md metadata.MD) error {
	s.md = metadata.Join(s.md, md)
	return nil
}
func (s *recordingStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }
func (s *recordingStream) SetTrailer(md metadata.MD) error { return s.SetHeader(md) }

// timingOutRefunder is a limit on a backend slower than its limiter's own
// timeout: it passes every call by its failure policy, counting nothing,
// with an error that wraps context.DeadlineExceeded, its own deadline's,
// not the call's.
type timingOutRefunder struct{ limitertest.CancelingRefunder }

func (*timingOutRefunder) TakeReceiptContext(_ context.Context, _ string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n < 1 {
		return hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 5}, hotlimit.Receipt{}, nil
	}
	return hotlimit.Decision{Allowed: true, Limit: 5}, hotlimit.Receipt{}, limitertest.ErrOwnTimeout
}

// TestCallEndedAfterADecisionBesideALimitersOwnTimeoutIsServed: under a rule
// of a memory limit and a limit whose backend timed out (its error, its own
// timeout's, wraps context.DeadlineExceeded) and failed open, the caller
// leaves just after the service decided, while the call was live for it:
// the memory limit keeps the call, so the call is served. Read as the
// call's end, the limiter's own deadline failed the call DeadlineExceeded
// without serving it, its quota spent.
func TestCallEndedAfterADecisionBesideALimitersOwnTimeoutIsServed(t *testing.T) {
	memory, slow := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	var cancel atomic.Pointer[context.CancelFunc]
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, slow}},
		// The observer runs after the service's decision, before the
		// interceptor reads the outcome: the caller leaves there.
		hotlimit.WithObserver(hotlimit.ObserverFunc(func(hotlimit.Event) {
			if c := cancel.Load(); c != nil {
				(*c)()
			}
		})),
		limitertest.OnBackend(slow, &timingOutRefunder{}, service.NewLimiter))
	require.NoError(t, err)
	intercept := grpclimit.UnaryServerInterceptor(svc)
	served := 0
	handler := func(context.Context, any) (any, error) { served++; return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	peerCtx := func(ctx context.Context) context.Context {
		return peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}})
	}
	ctx, c := context.WithCancel(context.Background())
	cancel.Store(&c)
	_, err = intercept(peerCtx(ctx), nil, info, handler)
	cancel.Store(nil)
	require.Error(t, ctx.Err(), "the caller left during the call")
	assert.NoError(t, err, "the call the memory limit counted is served")
	assert.Equal(t, 1, served)
	_, err = intercept(peerCtx(context.Background()), nil, info, handler)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "the memory limit's one call is spent: %v", err)
}
