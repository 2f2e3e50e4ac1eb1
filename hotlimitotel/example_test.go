package hotlimitotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/service"
)

// Metrics observes a service's decisions; here a manual reader stands in for
// an exporter, and prints every non-zero series after a few requests.
func Example() {
	reader := sdkmetric.NewManualReader() // an exporter's reader in production
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	if err != nil {
		panic(err)
	}
	var now atomic.Int64 // a frozen fake clock
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
		hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	if err != nil {
		panic(err)
	}
	m.WatchKeys("api", svc.Len)
	for range 5 {
		svc.Allow("alice", "GET /")
	}
	svc.Take("bob", "GET /", 2)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch data := metric.Data.(type) {
			case metricdata.Sum[int64]:
				points = data.DataPoints
			case metricdata.Gauge[int64]:
				points = data.DataPoints
			}
			for _, p := range points {
				if p.Value == 0 {
					continue
				}
				var attrs []string
				for _, kv := range p.Attributes.ToSlice() {
					attrs = append(attrs, string(kv.Key)+"="+kv.Value.Emit())
				}
				lines = append(lines, fmt.Sprintf("%s{%s} %d", metric.Name, strings.Join(attrs, ","), p.Value))
			}
		}
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// hotlimit.decisions{outcome=allowed,rule=default} 3
	// hotlimit.decisions{outcome=denied,rule=default} 2
	// hotlimit.decisions{outcome=near_limit,rule=default} 1
	// hotlimit.keys{limiter=api} 2
	// hotlimit.requests{outcome=allowed,rule=default} 4
	// hotlimit.requests{outcome=denied,rule=default} 2
	// hotlimit.requests{outcome=near_limit,rule=default} 1
}
