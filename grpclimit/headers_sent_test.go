package grpclimit_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// headerFirstService sends its own headers through the stream, then fails
// the stream.
type headerFirstService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (headerFirstService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	if err := stream.SendHeader(metadata.Pairs("x-own", "1")); err != nil {
		return err
	}
	return status.Error(codes.Aborted, "after the headers")
}

// TestStreamSendHeaderCarriesTheFields: a handler that sends its headers
// with the stream's SendHeader sends the limit's fields with them, as its
// first message would: the stream has committed, so they belong to the
// headers, and the failure that follows does not move them to its
// trailers.
func TestStreamSendHeaderCarriesTheFields(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	cc := serveImpl(t, headerFirstService{}, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc)))
	stream, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
	header, err := stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, header.Get("x-own"))
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, header.Get(grpclimit.MetadataRateLimit), "in the headers")
	assert.Empty(t, stream.Trailer().Get(grpclimit.MetadataRateLimit), "not again in the trailers")
}

// TestLongPolicyNameIsSentWhole: a policy name too long for the buffer
// the RateLimit item is built in (about 70 bytes) is sent whole, in both
// items, on a call that proceeds and on a denial.
func TestLongPolicyNameIsSentWhole(t *testing.T) {
	name := strings.Repeat("n", 150)
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	cc := serveImpl(t, &testService{}, grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
		grpclimit.WithPolicyName(func(hotlimit.Config) string { return name }))))
	client := testgrpc.NewTestServiceClient(cc)
	var header, trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
	require.NoError(t, err)
	assert.Equal(t, []string{`"` + name + `";q=1;w=60`}, header.Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{`"` + name + `";r=0;t=60`}, header.Get(grpclimit.MetadataRateLimit))
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Equal(t, []string{`"` + name + `";r=0;t=60`}, trailer.Get(grpclimit.MetadataRateLimit))
}

// serveImpl serves impl with the server options on a loopback TCP port and
// returns a client connection to it.
func serveImpl(t *testing.T, impl testgrpc.TestServiceServer, sopts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(sopts...)
	testgrpc.RegisterTestServiceServer(srv, impl)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
