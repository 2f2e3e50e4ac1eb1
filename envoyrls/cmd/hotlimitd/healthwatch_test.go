package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestHealthWatchEndsOnDrain: a grpc.health.v1.Health/Watch held open, as
// a client that watches the server's health holds it, hears NOT_SERVING
// when the drain begins and then ends, with status OK, so that it does not
// hold up the stop until -drain (an hour here) has passed. A watch of a
// service the server does not know, told SERVICE_UNKNOWN, ends too.
func TestHealthWatchEndsOnDrain(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-drain", "1h"}, io.Discard)
	hc := healthpb.NewHealthClient(srv.conn)
	// Bounded, so that a watch that does not end fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	known, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "ratelimit"})
	require.NoError(t, err)
	resp, err := known.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	unknown, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "nosuch"})
	require.NoError(t, err)
	resp, err = unknown.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVICE_UNKNOWN, resp.GetStatus())

	srv.cancel()
	resp, err = known.Recv()
	require.NoError(t, err, "the drain is told")
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus())
	_, err = known.Recv()
	assert.ErrorIs(t, err, io.EOF, "the watch ends, status OK")
	_, err = unknown.Recv()
	assert.ErrorIs(t, err, io.EOF, "the watch of an unknown service ends, status OK")
	select {
	case <-srv.done:
		require.NoError(t, srv.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the stop waits for the watches")
	}
}
