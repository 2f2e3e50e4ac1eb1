package envoyrls_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls"
)

func ExampleServer() {
	d, err := envoyrls.ParseDomain("api.yaml", []byte(`
domain: api
descriptors:
  - key: user
    rate_limit:
      algorithm: SlidingLog
      unit: minute
      requests_per_unit: 2
`))
	if err != nil {
		panic(err)
	}
	cfg, err := envoyrls.NewConfig(d)
	if err != nil {
		panic(err)
	}
	var now atomic.Int64 // a frozen clock, so that the output is exact
	srv, err := envoyrls.New(cfg, envoyrls.WithClock(now.Load), envoyrls.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "user", Value: "alice"}},
	}}}
	for range 3 {
		resp, err := srv.ShouldRateLimit(context.Background(), req)
		if err != nil {
			panic(err)
		}
		st := resp.Statuses[0]
		fmt.Println(resp.OverallCode, st.LimitRemaining, st.CurrentLimit.RequestsPerUnit, st.CurrentLimit.Unit)
	}
	now.Add(int64(time.Minute))
	resp, err := srv.ShouldRateLimit(context.Background(), req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.OverallCode, "a minute later")
	// Output:
	// OK 1 2 MINUTE
	// OK 0 2 MINUTE
	// OVER_LIMIT 0 2 MINUTE
	// OK a minute later
}
