package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// A fixed window of 2 calls per second for every (peer IP, method), on a fake
// clock, with the interceptor called as grpc-go calls it.
func ExampleUnaryServerInterceptor() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	now.Store(int64(10*time.Second + 250*time.Millisecond))
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(func(e grpclimit.Event) {
		fmt.Printf("%s %s allowed=%v remaining=%d\n", e.User, e.API, e.Decision.Allowed, e.Decision.Remaining)
	}))

	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	info := &grpc.UnaryServerInfo{FullMethod: "/shop.Orders/Create"}
	handler := func(context.Context, any) (any, error) { return "created", nil }
	for range 3 {
		resp, err := intercept(ctx, nil, info, handler)
		if err != nil {
			st := status.Convert(err)
			for _, d := range st.Details() { // in no set order: find the one wanted by its type
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					fmt.Println(st.Code(), ri.GetRetryDelay().AsDuration())
				}
			}
			continue
		}
		fmt.Println(resp)
	}
	// Output:
	// ip:192.0.2.1 /shop.Orders/Create allowed=true remaining=1
	// created
	// ip:192.0.2.1 /shop.Orders/Create allowed=true remaining=0
	// created
	// ip:192.0.2.1 /shop.Orders/Create allowed=false remaining=0
	// ResourceExhausted 750ms
}
