package grpclimit_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestDeniedMessageTrailersDescribeItsRule: a stream passes at its start
// (100 a second) and its second message is denied by the messages' own rule
// (1 a second). The denial's trailers must describe that rule alone, as a
// denied call's do: the stream's start is another decision, under another
// API, and listing it after the denial's policy would tell the client that
// the messages' rule has two limits. A stream that sent its headers keeps
// the start's fields there.
func TestDeniedMessageTrailersDescribeItsRule(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	require.NoError(t, svc.ConfigureAPI("RECV "+duplexCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true)))})
	client := testgrpc.NewTestServiceClient(cc)
	const deniedPolicy, deniedItem = `"fixedwindow-1-1s";q=1;w=1`, `"fixedwindow-1-1s";r=0;t=1`

	// Trailers-Only: the handler sent nothing before the denial.
	in, err := client.StreamingInputCall(ctx(t))
	require.NoError(t, err)
	for range 3 {
		if in.Send(&testgrpc.StreamingInputCallRequest{}) != nil {
			break // the server may end the stream before the client is done
		}
	}
	_, err = in.CloseAndRecv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	header, err := in.Header()
	require.NoError(t, err)
	assert.Empty(t, header.Get(grpclimit.MetadataPolicy), "a denial is Trailers-Only")
	assert.Equal(t, []string{deniedPolicy}, in.Trailer().Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{deniedItem}, in.Trailer().Get(grpclimit.MetadataRateLimit))
	assert.Equal(t, []string{"1000"}, in.Trailer().Get(grpclimit.MetadataPushback))

	// The handler answered the first message, with the start's headers.
	duplex, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, duplex.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = duplex.Recv()
	require.NoError(t, err)
	require.NoError(t, duplex.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = duplex.Recv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	header, err = duplex.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{`"fixedwindow-100-1s";q=100;w=1`}, header.Get(grpclimit.MetadataPolicy), "the start's")
	assert.Equal(t, []string{deniedPolicy}, duplex.Trailer().Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{deniedItem}, duplex.Trailer().Get(grpclimit.MetadataRateLimit))
}

// canceledStream is a server stream whose caller has left.
type canceledStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s canceledStream) Context() context.Context { return s.ctx }

// TestStreamOpenedAndClosedSpendsOne: as the docs say, a stream takes one
// when it starts, whatever it then sends: one opened and half-closed at
// once, with no message, has spent its one (and its end of input, with
// messages limited, takes nothing more), so the next is denied. A stream
// whose caller had left before it was decided takes nothing.
func TestStreamOpenedAndClosedSpendsOne(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)

	left, leave := context.WithCancel(context.Background())
	leave()
	err := grpclimit.StreamServerInterceptor(svc)(nil, canceledStream{ctx: left}, &grpc.StreamServerInfo{FullMethod: duplexCall},
		func(any, grpc.ServerStream) error { t.Error("an ended stream is not served"); return nil })
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)

	s, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, s.CloseSend())
	_, err = s.Recv()
	require.ErrorIs(t, err, io.EOF)
	s, err = client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = s.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	events := rec.all()
	require.Len(t, events, 2, "one decision per stream, none for the end of input")
	assert.False(t, events[0].Message)
	assert.True(t, events[0].Decision.Allowed)
}
