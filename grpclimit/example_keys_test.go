package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// A client that limits itself: with no WithUser, all its calls share one
// quota per method, and a denied call fails before it reaches the network
// (here the invoker, which stands for it, is not called).
func ExampleUnaryClientInterceptor() {
	var now atomic.Int64 // a frozen fake clock
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	intercept := grpclimit.UnaryClientInterceptor(svc)
	invoker := func(_ context.Context, method string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		fmt.Println("sent", method)
		return nil
	}
	for _, method := range []string{"/shop.Orders/Create", "/shop.Orders/Create", "/shop.Orders/Create", "/shop.Orders/List"} {
		if err := intercept(context.Background(), method, nil, nil, nil, invoker); err != nil {
			fmt.Println(method, status.Code(err))
		}
	}
	// Output:
	// sent /shop.Orders/Create
	// sent /shop.Orders/Create
	// /shop.Orders/Create ResourceExhausted
	// sent /shop.Orders/List
}

// A stream takes one when it starts, whatever it then sends: the third
// stream of a peer within the second is refused before its handler runs.
func ExampleStreamServerInterceptor() {
	var now atomic.Int64 // a frozen fake clock
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	intercept := grpclimit.StreamServerInterceptor(svc)
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	info := &grpc.StreamServerInfo{FullMethod: "/chat.Room/Join", IsClientStream: true, IsServerStream: true}
	handler := func(any, grpc.ServerStream) error {
		fmt.Println("joined")
		return nil
	}
	for range 3 {
		ss := &exampleStream{ctx: ctx}
		if err := intercept(nil, ss, info, handler); err != nil {
			fmt.Println(status.Code(err), "pushback", ss.trailer.Get(grpclimit.MetadataPushback))
		}
	}
	// Output:
	// joined
	// joined
	// ResourceExhausted pushback [1000]
}

// exampleStream is the server stream of ExampleStreamServerInterceptor: its
// context and the metadata the interceptor sets.
type exampleStream struct {
	grpc.ServerStream
	ctx             context.Context
	header, trailer metadata.MD
}

func (s *exampleStream) Context() context.Context { return s.ctx }
func (s *exampleStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}
func (s *exampleStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }
func (s *exampleStream) SetTrailer(md metadata.MD)       { s.trailer = metadata.Join(s.trailer, md) }

// The keys Metadata finds, for rules that give a caller a quota of its own:
// the same as httplimit.HeaderKey gives, and one key for every spelling of a
// host.
func ExampleMetadataKey() {
	fmt.Println(grpclimit.MetadataKey("X-API-Key", "premium"))
	fmt.Println(grpclimit.MetadataKey(":authority", "API.Example.com.:443"))
	fmt.Println(grpclimit.MetadataKey(":authority", "api.example.com:8443"))
	// Output:
	// header:x-api-key:premium
	// header::authority:api.example.com
	// header::authority:api.example.com:8443
}

// The wait a denial tells the client, in RetryInfo and the pushback trailer:
// rounded up to a whole millisecond, at least 1 ms, and none when no wait
// helps.
func ExampleRetryDelay() {
	for _, wait := range []time.Duration{750 * time.Millisecond, 1500 * time.Microsecond, time.Nanosecond, hotlimit.Never} {
		delay, ok := grpclimit.RetryDelay(hotlimit.Decision{RetryAfter: wait})
		fmt.Println(delay, ok)
	}
	// Output:
	// 750ms true
	// 2ms true
	// 1ms true
	// 0s false
}
