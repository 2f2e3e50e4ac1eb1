package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// TestReflectionDescribesTheRateLimitService: the gRPC server answers
// server reflection, as grpcurl needs to call it without the .proto files
// (which no package of Envoy's ships): it lists the rate limit service and
// the health service, and gives the file that declares ShouldRateLimit.
func TestReflectionDescribesTheRateLimitService(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, io.Discard)
	stream, err := reflectpb.NewServerReflectionClient(srv.conn).ServerReflectionInfo(context.Background())
	require.NoError(t, err)

	require.NoError(t, stream.Send(&reflectpb.ServerReflectionRequest{
		MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err, "server reflection answers")
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	assert.Contains(t, names, "envoy.service.ratelimit.v3.RateLimitService")
	assert.Contains(t, names, "grpc.health.v1.Health")

	require.NoError(t, stream.Send(&reflectpb.ServerReflectionRequest{
		MessageRequest: &reflectpb.ServerReflectionRequest_FileContainingSymbol{
			FileContainingSymbol: "envoy.service.ratelimit.v3.RateLimitService",
		},
	}))
	resp, err = stream.Recv()
	require.NoError(t, err)
	files := resp.GetFileDescriptorResponse().GetFileDescriptorProto()
	require.NotEmpty(t, files, "the file of RateLimitService: %v", resp.GetErrorResponse())
	var declares bool
	for _, b := range files {
		var fd descriptorpb.FileDescriptorProto
		require.NoError(t, proto.Unmarshal(b, &fd))
		for _, s := range fd.GetService() {
			for _, m := range s.GetMethod() {
				declares = declares || s.GetName() == "RateLimitService" && m.GetName() == "ShouldRateLimit"
			}
		}
	}
	assert.True(t, declares, "RateLimitService/ShouldRateLimit described")
	require.NoError(t, stream.CloseSend())
	srv.stop(t)
}

// TestReflectionStreamEndsOnDrain: a server reflection stream held open,
// as a gRPC GUI holds one while its user browses, ends with status OK when
// the drain begins, so that it does not hold up the stop until -drain (an
// hour here) has passed.
func TestReflectionStreamEndsOnDrain(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-drain", "1h"}, io.Discard)
	// Bounded, so that a stream that does not end fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := reflectpb.NewServerReflectionClient(srv.conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectpb.ServerReflectionRequest{
		MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{},
	}))
	_, err = stream.Recv()
	require.NoError(t, err, "server reflection answers")

	srv.cancel()
	_, err = stream.Recv()
	assert.ErrorIs(t, err, io.EOF, "the stream ends, status OK")
	select {
	case <-srv.done:
		require.NoError(t, srv.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the stop waits for the reflection stream")
	}
}
