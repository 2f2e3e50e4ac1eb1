package grpclimit_test

import (
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

// TestFailureMessagesKeepTheErrorOnTheServer: a limiter that cannot decide
// (a backend down whose failure policy denies: UNAVAILABLE) or that fails
// (a panic: INTERNAL) tells the client only that the rate limiter is
// unavailable. The error names the server's own infrastructure (a Redis
// address, a refused password, a panic's value), which is no business of a
// client: it stays on the server, in the observer's Event.Err, as httplimit
// keeps it out of its 503.
func TestFailureMessagesKeepTheErrorOnTheServer(t *testing.T) {
	closed := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return downLimiter{}, nil })
	for _, tc := range []struct {
		name    string
		factory hotlimit.Option
		code    codes.Code
		err     string // in Event.Err, never in the client's message
	}{
		{"unavailable", closed, codes.Unavailable, "connection refused"},
		{"internal", hotlimit.WithFactory(failing), codes.Internal, "backend down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, tc.factory)
			var rec recorder
			opts := []grpclimit.Option{grpclimit.WithObserver(rec.observe)}
			cc := serveBufconn(t, &testService{}, []grpc.ServerOption{
				grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, opts...)),
				grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, opts...)),
			})
			client := testgrpc.NewTestServiceClient(cc)

			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message(), "unary")
			assert.ErrorContains(t, rec.last().Err, tc.err, "the observer has the error")

			stream, err := client.FullDuplexCall(ctx(t))
			require.NoError(t, err)
			_, err = stream.Recv()
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message(), "stream")
			assert.ErrorContains(t, rec.last().Err, tc.err, "the observer has the error")
		})
	}
}
