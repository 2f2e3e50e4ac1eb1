package hotlimitprom_test

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/service"
)

// A service reporting to the metrics, and what a scrape then holds: a
// default of 3 per minute, and a new limit of 2 per minute rolled out in
// shadow mode on one API.
func Example() {
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
	  "apis":    {"GET /new": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]}
	}`))
	if err != nil {
		panic(err)
	}
	m := hotlimitprom.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
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

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			v := s.GetCounter().GetValue() + s.GetGauge().GetValue()
			if v == 0 {
				continue // every rule's outcomes are exported from its first decision
			}
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Printf("%s{%s} %v\n", f.GetName(), strings.Join(labels, ","), v)
		}
	}
	// Output:
	// hotlimit_decisions_total{outcome=allowed,rule=apis["GET /new"]} 1
	// hotlimit_decisions_total{outcome=allowed,rule=default} 3
	// hotlimit_decisions_total{outcome=denied,rule=default} 2
	// hotlimit_decisions_total{outcome=near_limit,rule=apis["GET /new"]} 1
	// hotlimit_decisions_total{outcome=near_limit,rule=default} 1
	// hotlimit_decisions_total{outcome=shadow_denied,rule=apis["GET /new"]} 3
	// hotlimit_keys{limiter=api} 3
	// hotlimit_requests_total{outcome=allowed,rule=apis["GET /new"]} 1
	// hotlimit_requests_total{outcome=allowed,rule=default} 4
	// hotlimit_requests_total{outcome=denied,rule=default} 2
	// hotlimit_requests_total{outcome=near_limit,rule=apis["GET /new"]} 1
	// hotlimit_requests_total{outcome=near_limit,rule=default} 1
	// hotlimit_requests_total{outcome=shadow_denied,rule=apis["GET /new"]} 3
}

// A backend's fallbacks are exported at 0 from the building of the first
// limiter on it, which calls ObserveBackend (redislimit.New does, for a
// limiter given the Metrics with hotlimit.WithObserver), so that
// increase(hotlimit_fallbacks_total[5m]) sees the first one.
func ExampleMetrics_ObserveBackend() {
	m := hotlimitprom.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	show := func(when string) {
		families, err := reg.Gather()
		if err != nil {
			panic(err)
		}
		fmt.Println(when)
		for _, f := range families {
			for _, s := range f.GetMetric() {
				l := s.GetLabel()
				fmt.Printf("  %s{%s=%s,%s=%s} %v\n", f.GetName(), l[0].GetName(), l[0].GetValue(), l[1].GetName(), l[1].GetValue(), s.GetCounter().GetValue())
			}
		}
	}
	show("no limiter on a backend yet:")
	m.ObserveBackend("redis") // what redislimit.New does
	show("a limiter on Redis built:")
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	show("Redis timed out once:")
	// Output:
	// no limiter on a backend yet:
	// a limiter on Redis built:
	//   hotlimit_fallbacks_total{backend=redis,reason=breaker_open} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=canceled} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=clock_range} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=error} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=timeout} 0
	// Redis timed out once:
	//   hotlimit_fallbacks_total{backend=redis,reason=breaker_open} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=canceled} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=clock_range} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=error} 0
	//   hotlimit_fallbacks_total{backend=redis,reason=timeout} 1
}
