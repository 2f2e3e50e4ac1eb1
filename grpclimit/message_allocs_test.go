package grpclimit_test

import (
	"context"
	"net"
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

// recvStream is a server stream from a TCP peer whose every RecvMsg
// succeeds at once, standing in for grpc-go's when the interceptor is
// called directly.
type recvStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s recvStream) Context() context.Context { return s.ctx }
func (s recvStream) RecvMsg(any) error        { return nil }

// allocsPerMessage runs icpt's stream ss of method, and returns how many
// allocations a message it receives costs, averaged over runs messages
// received after the first (which makes the peer's key and the pair's state).
func allocsPerMessage(t *testing.T, icpt grpc.StreamServerInterceptor, ss grpc.ServerStream, method string, runs int) float64 {
	t.Helper()
	var allocs float64
	err := icpt(nil, ss, &grpc.StreamServerInfo{FullMethod: method}, func(_ any, ss grpc.ServerStream) error {
		var m struct{}
		require.NoError(t, ss.RecvMsg(&m)) // the peer's key and the pair's state now exist
		allocs = testing.AllocsPerRun(runs, func() {
			if err := ss.RecvMsg(&m); err != nil {
				t.Fatal(err)
			}
		})
		return nil
	})
	require.NoError(t, err)
	return allocs
}

// TestStreamMessageAllocatesNothing: with WithStreamMessages, each message a
// stream receives is a decision on the hot path of a long stream, and one
// that passes, from a peer seen before, allocates nothing: the API
// "RECV " + method is made once per stream, not once per message.
func TestStreamMessageAllocatesNothing(t *testing.T) {
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false))
	allocs := allocsPerMessage(t, icpt, recvStream{ctx: ctx}, duplexCall, 100)
	assert.Zero(t, allocs, "allocations per received message")
}

// TestStreamMessagesKeyedByTheirAPIFunction: the API of a received message
// is "RECV " and what the API KeyFunc finds for it, not the method's,
// whenever the function finds one: a rule on "RECV orders" limits the
// messages an API function keys "orders", and a message it finds no API
// for falls back to "RECV " and the method.
func TestStreamMessagesKeyedByTheirAPIFunction(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV orders", cfg(hotlimit.FixedWindow, 1, time.Second)))
	var rec recorder
	api := func(_ context.Context, _ string, req any) (string, bool) {
		if req == nil { // the stream's start
			return "", false
		}
		return "orders", true
	}
	cc := serveImpl(t, &testService{}, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc,
		grpclimit.WithStreamMessages(true), grpclimit.WithAPI(api), grpclimit.WithObserver(rec.observe))))
	s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v: the second message of \"RECV orders\"", err)
	events := rec.all()
	require.Len(t, events, 3)
	assert.Equal(t, duplexCall, events[0].API, "the start")
	assert.Equal(t, "RECV orders", events[1].API)
	assert.Equal(t, "RECV orders", events[2].API)
}

// headerRecvStream is recvStream with headers and trailers that can be set.
type headerRecvStream struct{ recvStream }

func (headerRecvStream) SetHeader(metadata.MD) error  { return nil }
func (headerRecvStream) SendHeader(metadata.MD) error { return nil }
func (headerRecvStream) SetTrailer(metadata.MD)       {}

// TestStreamMessageUnderSeveralLimitsAllocatesNothing: with the RateLimit
// metadata on (the default), a received message that passes sends no
// metadata (only a denied one's trailers tell its limits), so under a rule
// of several limits it copies none of their decisions, and allocates
// nothing, as under a rule of one.
func TestStreamMessageUnderSeveralLimitsAllocatesNothing(t *testing.T) {
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	require.NoError(t, svc.Replace(severalLimits))
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true))
	allocs := allocsPerMessage(t, icpt, headerRecvStream{recvStream{ctx: ctx}}, duplexCall, 100)
	assert.Zero(t, allocs, "allocations per received message")
}

// TestDeniedStreamMessageTellsEveryLimitOfItsRule: a received message that
// passes copies no decision of its rule's other limits, but one denied
// still tells them all in the stream's trailers, each with its own policy
// and numbers, the denying limit first.
func TestDeniedStreamMessageTellsEveryLimitOfItsRule(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	require.NoError(t, svc.Replace(service.Rules{
		Default: service.Limits{cfg(hotlimit.FixedWindow, 100, time.Minute)},
		APIs: map[string]service.Limits{"RECV " + duplexCall: {
			cfg(hotlimit.FixedWindow, 5, time.Minute),
			cfg(hotlimit.FixedWindow, 1, time.Minute),
		}},
	}))
	cc := serveImpl(t, &testService{}, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true))))
	s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	require.NoError(t, err, "the first message")
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "the second message: %v", err)
	md := s.Trailer()
	assert.Equal(t, []string{`"fixedwindow-1-1m";q=1;w=60`, `"fixedwindow-5-1m";q=5;w=60`}, md.Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{`"fixedwindow-1-1m";r=0;t=60`, `"fixedwindow-5-1m";r=4;t=60`}, md.Get(grpclimit.MetadataRateLimit))
}
