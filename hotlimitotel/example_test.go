package hotlimitotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/service"
)

// A service reporting to the instruments, and what a collection then holds:
// a default of 3 per minute, and a new limit of 2 per minute rolled out in
// shadow mode on one API. A program passes its own MeterProvider's meter,
// such as otel.GetMeterProvider().Meter("hotlimit"); the example reads a
// ManualReader to print the points.
func Example() {
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
	  "apis":    {"GET /new": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]}
	}`))
	if err != nil {
		panic(err)
	}
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	if err != nil {
		panic(err)
	}
	var now atomic.Int64 // a frozen fake clock
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	if err != nil {
		panic(err)
	}
	m.WatchKeys("api", svc.Len)
	for range 5 {
		svc.Allow("alice", "GET /")
		svc.Allow("alice", "GET /new")
	}
	svc.Take("bob", "GET /", 2)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	point := func(name string, set attribute.Set, v int64) {
		var attrs []string
		for _, kv := range set.ToSlice() {
			attrs = append(attrs, string(kv.Key)+"="+kv.Value.String())
		}
		lines = append(lines, fmt.Sprintf("%s{%s} %d", name, strings.Join(attrs, ","), v))
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch data := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					point(mt.Name, p.Attributes, p.Value)
				}
			}
		}
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// hotlimit.decisions{hotlimit.outcome=allowed,hotlimit.rule=apis["GET /new"]} 1
	// hotlimit.decisions{hotlimit.outcome=allowed,hotlimit.rule=default} 3
	// hotlimit.decisions{hotlimit.outcome=denied,hotlimit.rule=apis["GET /new"]} 0
	// hotlimit.decisions{hotlimit.outcome=denied,hotlimit.rule=default} 2
	// hotlimit.decisions{hotlimit.outcome=near_limit,hotlimit.rule=apis["GET /new"]} 1
	// hotlimit.decisions{hotlimit.outcome=near_limit,hotlimit.rule=default} 1
	// hotlimit.decisions{hotlimit.outcome=shadow_denied,hotlimit.rule=apis["GET /new"]} 3
	// hotlimit.decisions{hotlimit.outcome=shadow_denied,hotlimit.rule=default} 0
	// hotlimit.key.count{hotlimit.limiter=api} 3
	// hotlimit.requests{hotlimit.outcome=allowed,hotlimit.rule=apis["GET /new"]} 1
	// hotlimit.requests{hotlimit.outcome=allowed,hotlimit.rule=default} 4
	// hotlimit.requests{hotlimit.outcome=denied,hotlimit.rule=apis["GET /new"]} 0
	// hotlimit.requests{hotlimit.outcome=denied,hotlimit.rule=default} 2
	// hotlimit.requests{hotlimit.outcome=near_limit,hotlimit.rule=apis["GET /new"]} 1
	// hotlimit.requests{hotlimit.outcome=near_limit,hotlimit.rule=default} 1
	// hotlimit.requests{hotlimit.outcome=shadow_denied,hotlimit.rule=apis["GET /new"]} 3
	// hotlimit.requests{hotlimit.outcome=shadow_denied,hotlimit.rule=default} 0
}
