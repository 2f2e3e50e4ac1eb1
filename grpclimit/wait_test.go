package grpclimit_test

import (
	"context"
	"sync/atomic"
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

// clockSleep is a hotlimit.WithSleep that advances now by each sleep and
// records it, so that a wait takes no real time; before is called first,
// when set.
func clockSleep(now *atomic.Int64, slept *[]time.Duration, before func()) hotlimit.WaitOption {
	return hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		if before != nil {
			before()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		*slept = append(*slept, d)
		now.Add(int64(d))
		return nil
	})
}

// TestClientWaitsForQuota: under WithWait, a client's call that its quota
// denies waits for the quota (RetryAfter, on the service's clock) and is
// then sent, to a real server over loopback; a stream waits as a unary
// call does. The observer hears the denial, then the pass; the server
// receives every call.
func TestClientWaitsForQuota(t *testing.T) {
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), time.Hour)
	var slept []time.Duration
	var outcomes []bool
	observe := grpclimit.WithObserver(func(e grpclimit.Event) { outcomes = append(outcomes, e.Decision.Allowed) })
	wait := grpclimit.WithWait(clockSleep(now, &slept, nil))
	ts := &testService{}
	cc := serveTCP(t, ts, nil,
		grpc.WithUnaryInterceptor(grpclimit.UnaryClientInterceptor(svc, wait, observe)),
		grpc.WithStreamInterceptor(grpclimit.StreamClientInterceptor(svc, wait, observe)))
	client := testgrpc.NewTestServiceClient(cc)

	for range 3 {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
	}
	assert.Equal(t, int32(3), ts.unary.Load(), "every call sent")
	assert.Equal(t, []time.Duration{time.Second}, slept, "the third waited for the next window")
	assert.Equal(t, []bool{true, true, false, true}, outcomes, "the denial, then the pass")

	slept = nil
	for range 3 {
		stream, err := client.StreamingInputCall(ctx(t))
		require.NoError(t, err)
		_, err = stream.CloseAndRecv()
		require.NoError(t, err)
	}
	assert.Equal(t, []time.Duration{time.Second}, slept, "the third stream waited for the next window")
}

// TestClientWaitEnds: a wait the call's deadline would not outlast fails
// the call at once with the denial's status, as without WithWait; a call
// whose context ends during the wait fails with its context's status,
// having taken nothing; without WithWait a denied call is not waited for.
func TestClientWaitEnds(t *testing.T) {
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), time.Hour)
	var slept []time.Duration
	sent := 0
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		sent++
		return nil
	}
	require.NoError(t, grpclimit.UnaryClientInterceptor(svc)(context.Background(), unaryCall, nil, nil, nil, invoker))

	plain := grpclimit.UnaryClientInterceptor(svc)
	assert.Equal(t, codes.ResourceExhausted, status.Code(plain(context.Background(), unaryCall, nil, nil, nil, invoker)), "no wait without WithWait")

	waiting := grpclimit.UnaryClientInterceptor(svc, grpclimit.WithWait(clockSleep(now, &slept, nil)))
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelShort()
	err := waiting(short, unaryCall, nil, nil, nil, invoker)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a minute to wait, 10 s left: %v", err)
	ri, _ := details(t, err)
	assert.Positive(t, ri.GetRetryDelay().AsDuration(), "the denial's RetryInfo")
	assert.Empty(t, slept, "at once")

	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaving := grpclimit.UnaryClientInterceptor(svc, grpclimit.WithWait(clockSleep(now, &slept, cancel)))
	err = leaving(cancelled, unaryCall, nil, nil, nil, invoker)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	assert.Equal(t, 1, sent, "only the first call was sent")

	now.Store(int64(time.Hour + time.Minute)) // the next window
	err = waiting(context.Background(), unaryCall, nil, nil, nil, invoker)
	require.NoError(t, err)
	assert.Equal(t, 2, sent, "the cancelled wait took nothing: the window's one call is this one")
}
