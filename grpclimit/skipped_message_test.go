package grpclimit_test

import (
	"errors"
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

// skippingService drops the messages the limit denies and serves the rest,
// as a telemetry stream that sheds load per message does.
type skippingService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (skippingService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	for {
		_, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case status.Code(err) == codes.ResourceExhausted:
			continue // dropped; the stream goes on
		case err != nil:
			return err
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
}

// TestSkippedMessageDenialsSetTheTrailersOnce: a handler may drop the
// messages the limit denies and go on with the stream. The trailers then
// describe one denial: each denial adding its fields and pushback to them
// would grow the stream's trailers with every message denied, without
// bound on a long stream, and a trailer of several pushback values is one
// gRFC A6 clients ignore.
func TestSkippedMessageDenialsSetTheTrailersOnce(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+duplexCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	cc := serveImpl(t, skippingService{}, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true))))

	const sent = 5
	s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx(t))
	require.NoError(t, err)
	for range sent {
		require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	}
	require.NoError(t, s.CloseSend())
	served := 0
	for {
		_, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		served++
	}
	require.Equal(t, 1, served, "one message a second passes, the others are dropped")
	trailer := s.Trailer()
	assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback))
	assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, trailer.Get(grpclimit.MetadataPolicy))
	assert.Len(t, trailer.Get(grpclimit.MetadataRateLimit), 1)
}
