package grpclimit_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// recvStream is a server stream from a TCP peer whose every RecvMsg
// succeeds at once, standing in for grpc-go's when the interceptor is
// called directly.
type recvStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s recvStream) Context() context.Context { return s.ctx }
func (s recvStream) RecvMsg(any) error        { return nil }

// TestStreamMessageAllocatesNothing: with WithStreamMessages, each message a
// stream receives is a decision on the hot path of a long stream, and one
// that passes, from a peer seen before, allocates nothing: the API
// "RECV " + method is made once per stream, not once per message.
func TestStreamMessageAllocatesNothing(t *testing.T) {
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false))
	var allocs float64
	err = icpt(nil, recvStream{ctx: ctx}, &grpc.StreamServerInfo{FullMethod: duplexCall}, func(_ any, ss grpc.ServerStream) error {
		var m struct{}
		require.NoError(t, ss.RecvMsg(&m)) // the peer's key and the pair's state now exist
		allocs = testing.AllocsPerRun(100, func() {
			if err := ss.RecvMsg(&m); err != nil {
				t.Fatal(err)
			}
		})
		return nil
	})
	require.NoError(t, err)
	assert.Zero(t, allocs, "allocations per received message")
}
