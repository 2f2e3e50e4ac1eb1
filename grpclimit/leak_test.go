package grpclimit_test

import (
	"context"
	"runtime"
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
	"github.com/hotlimit/hotlimit/service"
)

// settleGoroutines waits, up to a deadline, for the goroutine count to come
// back to base, and returns the count it last saw.
func settleGoroutines(base int) int {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// TestEndedCallsLeaveNothing: over a real gRPC connection on loopback,
// 1,000 calls whose client context is canceled while WithWait sleeps out a
// denial of an hour, and 200 streams limited per message that the client
// ends early, each after one message, leave no goroutine behind: a client
// or server that runs for months holds none per call it served. It counts
// the goroutines of the process: it must not run in parallel.
func TestEndedCallsLeaveNothing(t *testing.T) {
	// The real clock: the wait sleeps on a timer. A token bucket of one
	// request an hour denies every call after the first for as long as the
	// test runs; a fixed window would pass one again at the next hour's
	// start, on the wall clock, and that call would hear no denial.
	clientSvc, err := service.New(cfg(hotlimit.TokenBucket, 1, time.Hour))
	require.NoError(t, err)
	serverSvc, err := service.New(cfg(hotlimit.TokenBucket, 1_000_000, time.Second))
	require.NoError(t, err)
	denied := make(chan struct{}, 1)
	observe := grpclimit.WithObserver(func(e grpclimit.Event) {
		if !e.Decision.Allowed {
			select {
			case denied <- struct{}{}:
			default:
			}
		}
	})
	cc := serveTCP(t, &testService{},
		[]grpc.ServerOption{grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(serverSvc, grpclimit.WithStreamMessages(true)))},
		grpc.WithUnaryInterceptor(grpclimit.UnaryClientInterceptor(clientSvc, grpclimit.WithWait(), observe)))
	client := testgrpc.NewTestServiceClient(cc)
	_, err = client.EmptyCall(ctx(t), &testgrpc.Empty{}) // the hour's one call; the connection is up
	require.NoError(t, err)
	stream := func() {
		sctx, cancel := context.WithCancel(context.Background())
		defer cancel() // ends the stream early: the server's handler is still receiving
		s, err := client.FullDuplexCall(sctx)
		require.NoError(t, err)
		require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
		_, err = s.Recv()
		require.NoError(t, err)
	}
	stream() // the first stream's goroutines of the connection that stay
	base := runtime.NumGoroutine()

	for range 1000 {
		cctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := client.EmptyCall(cctx, &testgrpc.Empty{})
			done <- err
		}()
		select {
		case <-denied: // WithWait sleeps out the hour, or is about to
		case <-time.After(10 * time.Second):
			t.Fatal("a call was not denied")
		}
		cancel()
		select {
		case err := <-done:
			assert.Equal(t, codes.Canceled, status.Code(err))
		case <-time.After(10 * time.Second):
			t.Fatal("a call whose context was canceled during its wait did not end")
		}
	}
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines left by 1,000 waits whose context was canceled")

	for range 200 {
		stream()
	}
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines left by 200 streams the client ended early")
}
