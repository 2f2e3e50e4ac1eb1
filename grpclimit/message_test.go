package grpclimit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestFailureMessagesKeepTheErrorOnTheServer: a limiter that cannot decide
// (a backend down whose failure policy denies: UNAVAILABLE) or that fails
// (a panic: INTERNAL) tells the client only that the rate limiter is
// unavailable. The error names the server's own infrastructure (a Redis
// address, a refused password, a panic's value), which is no business of a
// client: it stays on the server, in the observer's Event.Err, as httplimit
// keeps it out of its 503. So it is on every path that decides a call (see
// everyPath): the status's message says no more, it has no details but a
// failure policy's wait (RetryInfo), and no header or trailer carries the
// error. Under MiddlewareLimiter the
// middleware writes the status's text into its own message, which then ends
// the same way.
func TestFailureMessagesKeepTheErrorOnTheServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend hotlimit.Limiter
		code    codes.Code
		err     string // in Event.Err, never in what the client gets
	}{
		{"unavailable", downLimiter{}, codes.Unavailable, "connection refused"},
		{"internal", panicky{}, codes.Internal, "backend down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range everyPath(t, backendService(t, tc.backend)) {
				st := status.Convert(r.err)
				if r.path == middlewarePath {
					assert.Equal(t, codes.ResourceExhausted, st.Code(), "%s: the middleware's code", r.path)
					assert.True(t, strings.HasSuffix(st.Message(), "desc = rate limiter unavailable"), "%s: %q", r.path, st.Message())
				} else {
					assert.Equal(t, tc.code, st.Code(), "%s: %v", r.path, r.err)
					assert.Equal(t, "rate limiter unavailable", st.Message(), "%s: the error stays on the server", r.path)
				}
				assert.NotContains(t, st.Message(), tc.err, r.path)
				for _, d := range st.Details() {
					// A failure policy's wait, which says nothing of the server.
					_, isRetry := d.(*errdetails.RetryInfo)
					assert.True(t, isRetry, "%s: detail %v", r.path, d)
				}
				for _, md := range r.md {
					for k, vs := range md {
						for _, v := range vs {
							assert.NotContains(t, v, tc.err, "%s: metadata %s", r.path, k)
						}
					}
				}
				assert.ErrorContains(t, r.event.Err, tc.err, "%s: the observer has the error", r.path)
			}
		})
	}
}

// backendService returns a service whose default rule, one a second, is on
// backend (a limiter that fails, say), and whose rule for the start of
// duplexCall is in memory (100 a second), so that the messages of that
// stream are decided by backend.
func backendService(t *testing.T, backend hotlimit.Limiter) *service.Service {
	t.Helper()
	onBackend := cfg(hotlimit.FixedWindow, 1, time.Second)
	svc, _ := newService(t, onBackend, 0, limitertest.OnBackend(onBackend, backend, service.NewLimiter))
	require.NoError(t, svc.ConfigureAPI(duplexCall, cfg(hotlimit.FixedWindow, 100, time.Second)))
	return svc
}

// pathResult is what one path that decides a call told its client, and the
// event its observer saw last.
type pathResult struct {
	path  string
	err   error         // the call's status
	md    []metadata.MD // its header and trailer; none from a client interceptor
	event grpclimit.Event
}

// middlewarePath is the path of MiddlewareLimiter in everyPath's results.
const middlewarePath = "MiddlewareLimiter"

// everyPath makes one call through each path that decides one, each with
// svc and opts (and an observer): a unary call, a stream's start (of
// inputCall), a message a stream receives (of duplexCall, whose start svc
// must pass), the unary and stream client interceptors, and
// MiddlewareLimiter under go-grpc-middleware's unary server interceptor.
func everyPath(t *testing.T, svc *service.Service, opts ...grpclimit.Option) []pathResult {
	t.Helper()
	var rec recorder
	opts = append(opts[:len(opts):len(opts)], grpclimit.WithObserver(rec.observe))
	server := testgrpc.NewTestServiceClient(serveBufconn(t, &testService{}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, opts...)),
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, append(opts, grpclimit.WithStreamMessages(true))...)),
	}))
	client := testgrpc.NewTestServiceClient(serveBufconn(t, &testService{}, nil,
		grpc.WithUnaryInterceptor(grpclimit.UnaryClientInterceptor(svc, opts...)),
		grpc.WithStreamInterceptor(grpclimit.StreamClientInterceptor(svc, opts...))))
	middleware := testgrpc.NewTestServiceClient(serveBufconn(t, &testService{}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(ratelimit.UnaryServerInterceptor(grpclimit.MiddlewareLimiter(svc, opts...))),
	}))

	var got []pathResult
	seen := 0 // events of the paths before
	add := func(path string, err error, md ...metadata.MD) {
		events := rec.all()
		require.Greater(t, len(events), seen, "%s: the observer saw the decision", path)
		seen = len(events)
		got = append(got, pathResult{path: path, err: err, md: md, event: events[seen-1]})
	}

	var header, trailer metadata.MD
	_, err := server.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	add("unary", err, header, trailer)

	in, err := server.StreamingInputCall(ctx(t))
	require.NoError(t, err)
	_, err = in.CloseAndRecv()
	header, _ = in.Header()
	add("stream start", err, header, in.Trailer())

	duplex, err := server.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, duplex.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = duplex.Recv()
	header, _ = duplex.Header()
	if err != nil {
		add("received message", err, header, duplex.Trailer())
	} else { // dry run: the stream goes on
		require.NoError(t, duplex.CloseSend())
		add("received message", err, header)
	}
	require.True(t, got[len(got)-1].event.Message, "the message's decision, not the start's")

	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	add("client unary", err)

	cs, err := client.StreamingInputCall(ctx(t))
	if err == nil {
		_, err = cs.CloseAndRecv()
	}
	add("client stream", err)

	header, trailer = nil, nil
	_, err = middleware.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	add(middlewarePath, err, header, trailer)
	return got
}
