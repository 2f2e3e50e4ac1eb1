package grpclimit_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// givingUpService drops the first message the limit denies and fails the
// stream with the second denial, as a handler that tolerates some shedding
// does. It sends nothing before, so the stream's failure is Trailers-Only.
type givingUpService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (givingUpService) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	denied := 0
	for {
		_, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{})
		case status.Code(err) == codes.ResourceExhausted:
			if denied++; denied == 2 {
				return err
			}
		case err != nil:
			return err
		}
	}
}

// TestStreamTrailersDescribeTheDenialItFailsWith: a handler that drops a
// denied message, goes on, and fails the stream with a later denial sends
// that denial's status, and the trailers describe it too: the pushback a
// client's retry policy waits (the trailer's "1000", the status's 1 s), not
// the earlier denial's 100 ms, which would retry the stream while its
// messages are still denied.
func TestStreamTrailersDescribeTheDenialItFailsWith(t *testing.T) {
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	events := make(chan grpclimit.Event, 8)
	cc := serveImpl(t, givingUpService{}, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc,
		grpclimit.WithStreamMessages(true), grpclimit.WithObserver(func(e grpclimit.Event) { events <- e }))))
	c := ctx(t)
	s, err := testgrpc.NewTestServiceClient(cc).StreamingInputCall(c)
	require.NoError(t, err)
	require.True(t, (<-events).Decision.Allowed, "the start")
	for i, step := range []struct {
		at      time.Duration
		allowed bool
	}{
		{0, true},
		{900 * time.Millisecond, false}, // dropped: retry in 100 ms
		{time.Second, true},             // the next window
		{time.Second, false},            // fails the stream: retry in 1 s
	} {
		now.Store(int64(step.at))
		require.NoError(t, s.Send(&testgrpc.StreamingInputCallRequest{}))
		select {
		case e := <-events: // the message is decided before the clock moves again
			require.Equal(t, step.allowed, e.Decision.Allowed, "step %d", i)
		case <-c.Done():
			t.Fatalf("step %d: no decision", i)
		}
	}
	_, err = s.CloseAndRecv()
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry, "the status's RetryInfo")
	assert.Equal(t, time.Second, retry.GetRetryDelay().AsDuration(), "the status is the last denial's")
	trailer := s.Trailer()
	assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback), "the pushback is the status's denial's")
	assert.Equal(t, []string{`"fixedwindow-1-1s";r=0;t=1`}, trailer.Get(grpclimit.MetadataRateLimit))
	assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, trailer.Get(grpclimit.MetadataPolicy))
}

// panicOnDenial panics when a message it receives is denied.
type panicOnDenial struct {
	testgrpc.UnimplementedTestServiceServer
}

func (panicOnDenial) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	for {
		_, err := stream.Recv()
		if status.Code(err) == codes.ResourceExhausted {
			panic("denied")
		}
		if err != nil {
			return err
		}
	}
}

// TestDenialThenPanicBehindARecoveryCarriesTheDenial: the trailers of a
// denied message, set when the handler returns, are set too when it panics
// instead, for a recovery interceptor outside the limit to answer with.
func TestDenialThenPanicBehindARecoveryCarriesTheDenial(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	internal := recovery.WithRecoveryHandler(func(p any) error { return status.Errorf(codes.Internal, "panic: %v", p) })
	cc := serveImpl(t, panicOnDenial{}, grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(internal),
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true))))
	s, err := testgrpc.NewTestServiceClient(cc).StreamingInputCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingInputCallRequest{}))
	require.NoError(t, s.Send(&testgrpc.StreamingInputCallRequest{}))
	_, err = s.CloseAndRecv()
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	trailer := s.Trailer()
	assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback))
	assert.Equal(t, []string{`"fixedwindow-1-1s";r=0;t=1`}, trailer.Get(grpclimit.MetadataRateLimit))
	assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, trailer.Get(grpclimit.MetadataPolicy))
}

// TestStreamFailedByABrokenLimiterSendsNoEarlierDenial: a stream that
// drops a denied message and then fails with codes.Internal, its limiter
// broken on a later message, carries no trailers of the earlier denial, as
// a unary call failed so carries none: no pushback for a retry of a call
// whose failure no wait was said to fix.
func TestStreamFailedByABrokenLimiterSendsNoEarlierDenial(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	var messages atomic.Int32
	user := func(_ context.Context, _ string, req any) (string, bool) {
		if req != nil && messages.Add(1) == 3 {
			panic("broken")
		}
		return "u", true
	}
	cc := serveImpl(t, givingUpService{}, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc,
		grpclimit.WithStreamMessages(true), grpclimit.WithUser(user))))
	s, err := testgrpc.NewTestServiceClient(cc).StreamingInputCall(ctx(t))
	require.NoError(t, err)
	for range 3 { // passes, denied and dropped, fails the limiter
		require.NoError(t, s.Send(&testgrpc.StreamingInputCallRequest{}))
	}
	_, err = s.CloseAndRecv()
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	trailer := s.Trailer()
	assert.Empty(t, trailer.Get(grpclimit.MetadataPushback))
	assert.Empty(t, trailer.Get(grpclimit.MetadataRateLimit))
	assert.Empty(t, trailer.Get(grpclimit.MetadataPolicy))
}
