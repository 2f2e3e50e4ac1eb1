package envoyrls_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit/envoyrls"
)

// A Server in a gRPC server of the program's own, in place of hotlimitd:
// registered as the rate limit service, served with Codec so that a request
// past MaxDescriptors is refused before it is decoded, and closed once the
// gRPC server has stopped answering.
func ExampleServer_grpc() {
	var now atomic.Int64 // a frozen clock, so that the output is exact
	srv, err := envoyrls.New(exampleConfig("cards.yaml", `
domain: cards
descriptors:
  - key: network
    rate_limit: {unit: second, requests_per_unit: 1}
`), envoyrls.WithClock(now.Load), envoyrls.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	g := grpc.NewServer(grpc.ForceServerCodecV2(envoyrls.Codec()))
	pb.RegisterRateLimitServiceServer(g, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "cards", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "network", Value: "visa"}},
	}}}
	for range 2 {
		resp, err := client.ShouldRateLimit(context.Background(), req)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.OverallCode)
	}
	for range envoyrls.MaxDescriptors {
		req.Descriptors = append(req.Descriptors, req.Descriptors[0])
	}
	_, err = client.ShouldRateLimit(context.Background(), req)
	fmt.Println(status.Code(err)) // refused by Codec, before decoding

	g.GracefulStop() // no request is answered past it
	fmt.Println(<-served, srv.Close())
	// Output:
	// OK
	// OVER_LIMIT
	// Internal
	// <nil> <nil>
}
