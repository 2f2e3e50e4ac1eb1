package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrainRefusesNewHTTPRequests: once shutdown starts, the HTTP server
// takes no new request while a gRPC call is still in flight, as the gRPC
// server takes no new call: both drain at once, not HTTP only after gRPC.
// It answers 503 (or, once closed, refuses the connection) without a
// decision. The call in flight is answered in full, and run returns.
func TestDrainRefusesNewHTTPRequests(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-drain", "1m"}, &logs)
	call := openGRPCStream(t, srv.grpc, &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
	}}})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	body := `{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"2"}]}]}`
	res, err := client.Post("http://"+srv.http+"/json", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "served before the shutdown")

	srv.cancel()
	refused := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) { // polling, with a deadline
		res, err := client.Post("http://"+srv.http+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			refused = true
			break
		}
		_ = res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			refused = true
			break
		}
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	assert.True(t, refused, "a new /json request is refused while the gRPC call drains")

	resp, st := call.finish()
	assert.Equal(t, "0", st, "grpc-status 0")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "the call in flight is answered")
	select {
	case <-srv.done:
		require.NoError(t, srv.err)
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful stop")
	}
}
