package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// rawCodec sends a message's bytes as they are, so that a test can send
// what no RateLimitRequest marshals to.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }
func (rawCodec) Name() string                       { return "proto" }

// TestGRPCLargeMessages: a message just under the receive bound that would
// decode into hundreds of MB is refused having cost little, one over the
// bound is ResourceExhausted, a large valid one is answered, and the server
// answers as before afterwards.
func TestGRPCLargeMessages(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "1000")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, io.Discard)
	send := func(b []byte) (*pb.RateLimitResponse, error) {
		var resp pb.RateLimitResponse
		err := srv.conn.Invoke(context.Background(), "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", &b, &resp,
			grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(8<<20))
		return &resp, err
	}
	head, err := proto.Marshal(&pb.RateLimitRequest{Domain: "web"})
	require.NoError(t, err)
	empties := func(size int) []byte { // domain web, then empty descriptors up to size bytes
		return append(append([]byte(nil), head...), strings.Repeat("\x12\x00", (size-len(head))/2)...)
	}
	_, err = send(head) // the connection, once
	require.Error(t, err)

	near := empties(grpcLimits.recvBytes - 16)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = send(near)
	runtime.ReadMemStats(&after)
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.ErrorContains(t, err, "more than 1024 descriptors")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("client and server allocated %d bytes for a message of %d", alloc, len(near))
	assert.Less(t, alloc, uint64(4*len(near)), "bounded by the message (sent, received, copied), not by the 290 MB it would decode into")

	_, err = send(empties(grpcLimits.recvBytes + 16))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

	big, err := proto.Marshal(&pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: strings.Repeat("v", grpcLimits.recvBytes-1024)}},
	}}})
	require.NoError(t, err)
	resp, err := send(big)
	require.NoError(t, err, "a valid message near the bound")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)

	resp, err = pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web",
		Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "v"}}}}})
	require.NoError(t, err, "still serving")
	assert.Equal(t, uint32(1000), resp.Statuses[0].CurrentLimit.GetRequestsPerUnit())
	srv.stop(t)
}

// TestGRPCManyConcurrentStreams: more concurrent calls on one connection
// than the server takes at once all get an answer, and the limit holds
// exactly across them: as many pass as it allows, the others are over.
func TestGRPCManyConcurrentStreams(t *testing.T) {
	saved := grpcLimits
	t.Cleanup(func() { grpcLimits = saved })
	grpcLimits.streams = 8
	dir := t.TempDir()
	writeRule(t, dir, "300")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	calls := 1000
	if testing.Short() {
		calls = 400
	}
	var mu sync.Mutex
	codesSeen := map[pb.RateLimitResponse_Code]int{}
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "web",
				Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}})
			mu.Lock()
			defer mu.Unlock()
			if assert.NoError(t, err) {
				codesSeen[resp.OverallCode]++
			}
		})
	}
	wg.Wait()
	assert.Equal(t, map[pb.RateLimitResponse_Code]int{pb.RateLimitResponse_OK: 300, pb.RateLimitResponse_OVER_LIMIT: calls - 300}, codesSeen)
	srv.stop(t)
}

// TestGRPCSilentConnection: a connection that never sends its HTTP/2
// preface is closed once the handshake bound passes, and does not hold up
// a shutdown: gRPC's GracefulStop and Stop wait for connections in their
// handshake, which without the bound would take two minutes.
func TestGRPCSilentConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the handshake bound")
	}
	dir := t.TempDir()
	writeRule(t, dir, "5")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-drain", "1s"}, io.Discard)
	silent, err := net.Dial("tcp", srv.grpc)
	require.NoError(t, err)
	defer silent.Close()
	start := time.Now()
	srv.stop(t) // fails past 15 s
	t.Logf("stopped in %v with a silent connection open", time.Since(start))
	require.NoError(t, silent.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = silent.Read(make([]byte, 1))
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the server closed the silent connection: %v", err)
}

// TestGRPCHeadersTooLarge: a call whose headers are over the bound, sent
// by a client that does not heed the bound the server announces, is refused
// without the server reading them in; the connection's other calls and the
// server go on.
func TestGRPCHeadersTooLarge(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "5")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, io.Discard)
	conn, err := net.Dial("tcp", srv.grpc)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(conn, http2.ClientPreface)
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	require.NoError(t, fr.WriteSettings())
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "hotlimitd"},
		{":path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"}, {"content-type", "application/grpc"}, {"te", "trailers"},
		{"x-big", strings.Repeat("a", int(grpcLimits.headerBytes))}} {
		require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	block := hb.Bytes()
	const chunk = 16 << 10 // the default SETTINGS_MAX_FRAME_SIZE
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:chunk]}))
	for block = block[chunk:]; len(block) > 0; {
		n := min(chunk, len(block))
		require.NoError(t, fr.WriteContinuation(1, n == len(block), block[:n]))
		block = block[n:]
	}
	refused := ""
	for refused == "" {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "the connection stays open")
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			refused = "reset: " + f.ErrCode.String()
		case *http2.MetaHeadersFrame:
			for _, hf := range f.RegularFields() {
				if hf.Name == "grpc-status" {
					refused = "grpc-status " + hf.Value
				}
			}
		case *http2.GoAwayFrame:
			t.Fatalf("the connection was closed: %v", f.ErrCode)
		}
	}
	t.Log(refused)
	assert.NotEqual(t, "grpc-status 0", refused)

	resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web",
		Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "v"}}}}})
	require.NoError(t, err, "still serving")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
}
