package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// A server already built on go-grpc-middleware v2: its ratelimit interceptor
// asks the service, 2 calls per second for every (peer IP, method) on a fake
// clock. The calls it lets through get the RateLimit metadata at once, before
// the handler runs; a denied one gets the pushback trailer, and the
// middleware's own ResourceExhausted status, whose message holds the denial's
// as text.
func ExampleMiddlewareLimiter() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	now.Store(int64(10*time.Second + 250*time.Millisecond))
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	intercept := ratelimit.UnaryServerInterceptor(grpclimit.MiddlewareLimiter(svc))

	info := &grpc.UnaryServerInfo{FullMethod: "/shop.Orders/Create"}
	handler := func(context.Context, any) (any, error) { return "created", nil }
	for range 3 {
		// grpc-go gives a served call a context that names its method and
		// takes its metadata; the stream stands for it here.
		sts := &exampleTransportStream{method: info.FullMethod}
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
		ctx = grpc.NewContextWithServerTransportStream(ctx, sts)
		resp, err := intercept(ctx, nil, info, handler)
		if err != nil {
			fmt.Println(status.Code(err), "pushback", sts.trailer.Get(grpclimit.MetadataPushback))
			fmt.Println(status.Convert(err).Message())
			continue
		}
		fmt.Println(resp, sts.header.Get(grpclimit.MetadataRateLimit))
	}
	// Output:
	// created ["fixedwindow-2-1s";r=1;t=1]
	// created ["fixedwindow-2-1s";r=0;t=1]
	// ResourceExhausted pushback [750]
	// /shop.Orders/Create is rejected by grpc_ratelimit middleware, please retry later. rpc error: code = ResourceExhausted desc = rate limit of policy "fixedwindow-2-1s" (2 requests per 1s) exceeded; retry in 750ms
}

// exampleTransportStream is the server transport stream of
// ExampleMiddlewareLimiter: the call's method and the metadata set on it.
type exampleTransportStream struct {
	method          string
	header, trailer metadata.MD
}

func (s *exampleTransportStream) Method() string { return s.method }
func (s *exampleTransportStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}
func (s *exampleTransportStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }
func (s *exampleTransportStream) SetTrailer(md metadata.MD) error {
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// A client that limits the streams it opens, one per second for each tenant
// it calls for, read from the call's own metadata: a denied stream fails
// before it reaches the network (here the streamer, which stands for it, is
// not called), with the status a server would send.
func ExampleStreamClientInterceptor() {
	var now atomic.Int64 // a frozen fake clock
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	intercept := grpclimit.StreamClientInterceptor(svc, grpclimit.WithUser(grpclimit.OutgoingMetadata("x-tenant")))
	streamer := func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, method string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
		md, _ := metadata.FromOutgoingContext(ctx)
		fmt.Println("opened", method, "for", md.Get("x-tenant"))
		return nil, nil
	}
	desc := &grpc.StreamDesc{StreamName: "Join", ClientStreams: true, ServerStreams: true}
	for _, tenant := range []string{"acme", "acme", "globex"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", tenant)
		if _, err := intercept(ctx, desc, nil, "/chat.Room/Join", streamer); err != nil {
			fmt.Println(tenant, status.Code(err), status.Convert(err).Message())
		}
	}
	// Output:
	// opened /chat.Room/Join for [acme]
	// acme ResourceExhausted rate limit of policy "fixedwindow-1-1s" (1 request per 1s) exceeded; retry in 1s
	// opened /chat.Room/Join for [globex]
}
