package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// A payment whose backend fails should not count against its caller, but
// the interceptor's take cannot be given back: the payment method is exempt
// from it, and its handler takes with a receipt, under the user the
// interceptor would name, and gives the call back when the backend fails.
// The first payment fails and is given back, so the caller's quota of 2
// still passes two payments.
func ExampleWithExempt_giveBack() {
	frozen := func() int64 { return int64(time.Hour) }
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute},
		hotlimit.WithClock(frozen))
	if err != nil {
		panic(err)
	}
	const pay = "/shop.Payments/Pay"
	user := grpclimit.PeerIP()
	calls := 0
	charge := func() error { // the payment backend: its first call fails
		calls++
		if calls == 1 {
			return errors.New("card network unavailable")
		}
		return nil
	}
	handler := func(ctx context.Context, req any) (any, error) {
		u, _ := user(ctx, pay, req)
		d, receipt, err := svc.TakeReceiptContext(ctx, u, pay, 1)
		if err != nil && !d.Allowed {
			return nil, status.Error(codes.Unavailable, "rate limiter unavailable")
		}
		if !d.Allowed {
			return nil, status.Error(codes.ResourceExhausted, "too many payments")
		}
		if err := charge(); err != nil {
			// Given back even if the caller has left meanwhile.
			_ = svc.RefundContext(context.WithoutCancel(ctx), receipt)
			return nil, status.Error(codes.Unavailable, err.Error())
		}
		return "paid", nil
	}
	intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(user),
		grpclimit.WithExempt(func(method string) bool { return method == pay || grpclimit.HealthAndReflection(method) }))

	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	for range 4 {
		resp, err := intercept(ctx, nil, &grpc.UnaryServerInfo{FullMethod: pay}, handler)
		if err != nil {
			fmt.Println(status.Code(err), status.Convert(err).Message())
			continue
		}
		fmt.Println(resp)
	}
	// Output:
	// Unavailable card network unavailable
	// paid
	// paid
	// ResourceExhausted too many payments
}
