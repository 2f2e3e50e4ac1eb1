package envoyrls_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotlimit/hotlimit/envoyrls"
)

// exampleConfig parses one domain's file into a Config.
func exampleConfig(file, yaml string) *envoyrls.Config {
	d, err := envoyrls.ParseDomain(file, []byte(yaml))
	if err != nil {
		panic(err)
	}
	cfg, err := envoyrls.NewConfig(d)
	if err != nil {
		panic(err)
	}
	return cfg
}

// At each level an entry's key_value wins, then the first wildcard that
// matches, then the bare key; a rule applies only at the descriptor's last
// entry.
func ExampleConfig_Match() {
	cfg := exampleConfig("api.yaml", `
domain: api
descriptors:
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /admin/*
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: path
    rate_limit: {unit: second, requests_per_unit: 100}
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 1}
`)
	for _, entries := range [][]envoyrls.Entry{
		{{Key: "path", Value: "/login"}},
		{{Key: "path", Value: "/admin/users"}},
		{{Key: "path", Value: "/home"}},
		{{Key: "path", Value: "/home"}, {Key: "user", Value: "alice"}},
		{{Key: "user", Value: "alice"}},
	} {
		rule, known := cfg.Match("api", entries)
		if rule == nil {
			fmt.Println(entries, "no rule, domain known:", known)
			continue
		}
		fmt.Println(entries, rule.Key, rule.RequestsPerUnit, rule.Unit)
	}
	_, known := cfg.Match("other", nil)
	fmt.Println("domain other known:", known)
	// Output:
	// [{path /login}] api.path_/login 5 MINUTE
	// [{path /admin/users}] api.path_/admin/* 10 MINUTE
	// [{path /home}] api.path 100 SECOND
	// [{path /home} {user alice}] api.path.user 1 SECOND
	// [{user alice}] no rule, domain known: true
	// domain other known: false
}

// The reference server's /json endpoint: 200 while the request is within
// its limits, 429 once it is over, the response in protobuf's JSON mapping.
func ExampleServer_JSONHandler() {
	cfg := exampleConfig("api.yaml", `
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
`)
	var now atomic.Int64 // a frozen clock, so that the output is exact
	srv, err := envoyrls.New(cfg, envoyrls.WithClock(now.Load), envoyrls.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	h := srv.JSONHandler()
	body := `{"domain": "api", "descriptors": [{"entries": [{"key": "user", "value": "alice"}]}]}`
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/json", strings.NewReader(body)))
		fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `"overallCode":"OVER_LIMIT"`))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/json", nil))
	fmt.Println(rec.Code)
	// Output:
	// 200 false
	// 429 true
	// 405
}

// The reference server's /rlconfig: the rules in force, a line each, then
// the policy that decides each, as hotlimitd serves it on its HTTP port.
func ExampleServer_ConfigHandler() {
	cfg := exampleConfig("api.yaml", `
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: TokenBucket, burst: 20}
    descriptors:
      - key: path
        value: /login
        shadow_mode: true
        rate_limit: {unit: minute, requests_per_unit: 5}
`)
	srv, err := envoyrls.New(cfg, envoyrls.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.ConfigHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/rlconfig", nil))
	fmt.Print(rec.Body)
	// Output:
	// api.user: unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false, policy: TokenBucket 100/1m0s burst 20
	// api.user.path_/login: unit=MINUTE requests_per_unit=5, shadow_mode: true, quota_mode: false, policy: FixedWindow 5/1m0s
}

// A reload keeps the counts of the rules whose policy did not change, and a
// rule whose limit changed starts afresh.
func ExampleServer_Reload() {
	const file = `
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: ip
    rate_limit: {unit: minute, requests_per_unit: LIMIT}
`
	var now atomic.Int64 // a frozen clock, so that the output is exact
	srv, err := envoyrls.New(exampleConfig("api.yaml", strings.Replace(file, "LIMIT", "3", 1)),
		envoyrls.WithClock(now.Load), envoyrls.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	remaining := func(key string) uint32 {
		resp, err := srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api",
			Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: "a"}}}}})
		if err != nil {
			panic(err)
		}
		return resp.Statuses[0].LimitRemaining
	}
	fmt.Println("before:", remaining("user"), remaining("ip"))
	if err := srv.Reload(exampleConfig("api.yaml", strings.Replace(file, "LIMIT", "5", 1))); err != nil {
		panic(err)
	}
	fmt.Println("after:", remaining("user"), remaining("ip"))
	// Output:
	// before: 2 2
	// after: 1 4
}

// The reference server's stats, per rule, in a Prometheus registry: a
// request of 3 hits against a limit of 4 passes, up to the near-limit
// threshold of floor(0.8 × 4) = 3 but not past it; the next, of 2, is over
// the limit by one hit, and its other hit, between the threshold and the
// limit, is near it.
func ExampleNewMetrics() {
	cfg := exampleConfig("api.yaml", `
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 4}
`)
	m := envoyrls.NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	var now atomic.Int64 // a frozen clock, so that the output is exact
	srv, err := envoyrls.New(cfg, envoyrls.WithObserver(m), envoyrls.WithClock(now.Load),
		envoyrls.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	for _, hits := range []uint32{3, 2} {
		_, err := srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api", HitsAddend: hits,
			Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "user", Value: "a"}}}}})
		if err != nil {
			panic(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"total_hits", "within_limit", "near_limit", "over_limit"} {
		for _, f := range families {
			if f.GetName() != "ratelimit_service_rate_limit_"+name {
				continue
			}
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "key" {
						fmt.Printf("%s{key=%q} %v\n", name, l.GetValue(), s.GetCounter().GetValue())
					}
				}
			}
		}
	}
	// Output:
	// total_hits{key="api.user"} 5
	// within_limit{key="api.user"} 3
	// near_limit{key="api.user"} 1
	// over_limit{key="api.user"} 1
}
