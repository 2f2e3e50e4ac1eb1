package grpclimit_test

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestManyClientsOnOneKeyPassExactlyTheLimit: with the clock frozen,
// several client connections from one address (one key) open streams,
// send a message each on streams of their own and make unary calls from many goroutines at once.
// Under every algorithm and limit, exactly the limit of streams, of
// messages and of calls pass: the interceptors never admit more than the
// limiter does, nor fewer.
func TestManyClientsOnOneKeyPassExactlyTheLimit(t *testing.T) {
	conns, goroutines, each := 3, 4, 6
	if testing.Short() {
		each = 3
	}
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.GCRA, hotlimit.SlidingCounter} {
		for _, limit := range []int{1, 2, 7} {
			t.Run(fmt.Sprintf("algo=%v/limit=%d", a, limit), func(t *testing.T) {
				svc, _ := newService(t, cfg(a, limit, time.Minute), 0)
				// Every input stream starts; their messages share the limit.
				require.NoError(t, svc.ConfigureAPI(inputCall, cfg(hotlimit.FixedWindow, 1000, time.Minute)))
				require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(a, limit, time.Minute)))
				sopts := []grpc.ServerOption{
					grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc)),
					grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true))),
				}
				ts := &testService{}
				cc := serveTCP(t, ts, sopts)
				clients := []testgrpc.TestServiceClient{testgrpc.NewTestServiceClient(cc)}
				for range conns - 1 {
					other, err := grpc.NewClient(cc.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
					require.NoError(t, err)
					t.Cleanup(func() { _ = other.Close() })
					clients = append(clients, testgrpc.NewTestServiceClient(other))
				}
				var streams, calls atomic.Int64
				var wg sync.WaitGroup
				for c := range conns * goroutines {
					client := clients[c%conns]
					wg.Go(func() {
						for range each {
							switch _, err := client.EmptyCall(ctx(t), &testgrpc.Empty{}); status.Code(err) {
							case codes.OK:
								calls.Add(1)
							case codes.ResourceExhausted:
							default:
								t.Errorf("unary: %v", err)
							}
							s, err := client.FullDuplexCall(ctx(t))
							if err != nil {
								t.Errorf("open: %v", err)
								continue
							}
							_ = s.CloseSend()
							switch _, err := s.Recv(); {
							case errors.Is(err, io.EOF):
								streams.Add(1)
							case status.Code(err) == codes.ResourceExhausted:
							default:
								t.Errorf("stream: %v", err)
							}
							in, err := client.StreamingInputCall(ctx(t))
							if err != nil {
								t.Errorf("open: %v", err)
								continue
							}
							_ = in.Send(&testgrpc.StreamingInputCallRequest{})
							if _, err := in.CloseAndRecv(); err != nil && status.Code(err) != codes.ResourceExhausted {
								t.Errorf("input stream: %v", err)
							}
						}
					})
				}
				wg.Wait()
				assert.EqualValues(t, limit, calls.Load(), "unary calls")
				assert.EqualValues(t, limit, streams.Load(), "duplex streams")
				assert.EqualValues(t, limit, ts.received.Load(), "stream messages that reached handlers")
			})
		}
	}
}
