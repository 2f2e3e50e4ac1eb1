package envoyrls

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestDefaultBurstIsTheCapacity: a token bucket or GCRA rule of 10 a
// minute that sets no burst, under a default burst of 20
// (WithLimiterOptions(hotlimit.WithBurst(20))), admits 20 requests at
// once, and the server reports that capacity: limit_remaining counts down
// from 19, the draft RateLimit-Policy quotes q=20 (the burst, as for a rule
// that writes burst: 20), the observer gets the policy with its burst and
// calls a request near the limit when at most 20% of the 20 are left, and
// near_limit counts the hits past 80% of the 20 (the 17th to the 20th).
// current_limit and RateLimit-Limit stay requests_per_unit, 10, as the
// reference (which has no burst) reports them. The same holds for a
// descriptor's own limit, which takes the rule's algorithm. These reported
// a capacity of 10: q=10 while 20 passed, and the near-limit share of 10.
func TestDefaultBurstIsTheCapacity(t *testing.T) {
	for _, alg := range []string{"TokenBucket", "GCRA"} {
		for _, override := range []bool{false, true} {
			name := alg + "/rule"
			if override {
				name = alg + "/override"
			}
			t.Run(name, func(t *testing.T) {
				rpu := "10"
				if override {
					rpu = "1000" // the descriptor's own 10 a minute decides
				}
				d, err := ParseDomain("m.yaml", []byte("domain: m\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: "+rpu+", algorithm: "+alg+"}\n"))
				require.NoError(t, err)
				cfg, err := NewConfig(d)
				require.NoError(t, err)
				var (
					now      atomic.Int64 // frozen: nothing refills
					mu       sync.Mutex
					outcomes []hotlimit.Outcome
					policies []hotlimit.Config
				)
				now.Store(t0)
				rec := hotlimit.ObserverFunc(func(e hotlimit.Event) {
					mu.Lock()
					defer mu.Unlock()
					outcomes = append(outcomes, e.Outcome)
					policies = append(policies, e.Policy)
				})
				m := NewMetrics()
				reg := prometheus.NewPedanticRegistry()
				require.NoError(t, reg.Register(m))
				s, err := New(cfg, WithClock(now.Load), WithLogger(slog.New(slog.DiscardHandler)),
					WithObserver(hotlimit.Observers(m, rec)), WithHeaders(HeadersReference|HeadersDraft),
					WithLimiterOptions(hotlimit.WithBurst(20)))
				require.NoError(t, err)
				client := serve(t, s)

				ds := desc("k", "client")
				if override {
					ds.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 10, Unit: typev3.RateLimitUnit_MINUTE}
				}
				policy := `"` + map[string]string{"TokenBucket": "tokenbucket", "GCRA": "gcra"}[alg] + `-10-1m-burst20"`
				for i := 1; i <= 21; i++ {
					resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{ds}})
					require.NoError(t, err)
					st := resp.Statuses[0]
					hs := map[string]string{}
					for _, hv := range resp.ResponseHeadersToAdd {
						hs[hv.Key] = hv.Value
					}
					left := max(20-i, 0)
					if i <= 20 {
						assert.Equal(t, ok, resp.OverallCode, "request %d: within the burst of 20", i)
					} else {
						assert.Equal(t, over, resp.OverallCode, "request %d: past the burst", i)
					}
					assert.EqualValues(t, left, st.LimitRemaining, "request %d", i)
					assert.EqualValues(t, 10, st.CurrentLimit.GetRequestsPerUnit(), "request %d: current_limit is the reference's", i)
					assert.Equal(t, "10", hs["RateLimit-Limit"], "request %d: the reference's header, of current_limit", i)
					assert.Equal(t, policy+";q=20;w=120", hs["RateLimit-Policy"], "request %d: the burst, granted in 2m", i)
					assert.True(t, strings.HasPrefix(hs["RateLimit"], policy+";r="+strconv.Itoa(left)+";t="), "request %d: RateLimit %q", i, hs["RateLimit"])
				}

				mu.Lock()
				defer mu.Unlock()
				require.Len(t, outcomes, 21)
				for i, o := range outcomes {
					want := hotlimit.OutcomeAllowed
					switch {
					case i == 20:
						want = hotlimit.OutcomeDenied
					case 20-(i+1) <= 4: // at most 20% of the burst left
						want = hotlimit.OutcomeNearLimit
					}
					assert.Equal(t, want, o, "request %d", i+1)
					assert.Equal(t, 20, policies[i].Capacity(), "request %d: the policy as its limiter enforces it", i+1)
				}
				ms := metricsServer{m: m, reg: reg}
				byKey, _ := ms.series(t)
				assert.Equal(t, counts{total: 21, within: 20, near: 4, over: 1}, byKey["m.k"], "near: the 17th to the 20th of 20")
			})
		}
	}
}

// TestDefaultBurstLeavesOtherAlgorithms: a default burst
// (WithLimiterOptions(hotlimit.WithBurst(5))) reached the constructor of
// every rule's limiter, so that New refused any configuration with a
// FixedWindow, SlidingLog or SlidingCounter rule ("fixedwindow: burst 5:
// the algorithm has no burst other than its limit"), FixedWindow being the
// default algorithm: the option could serve only configurations of token
// buckets and GCRAs. It is now the burst of those that set none, in memory
// and through a factory, and the other algorithms, a descriptor's own
// limit included, are built without it and admit their limit.
func TestDefaultBurstLeavesOtherAlgorithms(t *testing.T) {
	d, err := ParseDomain("m.yaml", []byte(`domain: m
descriptors:
  - {key: alg, value: FixedWindow, rate_limit: {algorithm: FixedWindow, unit: minute, requests_per_unit: 3}}
  - {key: alg, value: SlidingLog, rate_limit: {algorithm: SlidingLog, unit: minute, requests_per_unit: 3}}
  - {key: alg, value: SlidingCounter, rate_limit: {algorithm: SlidingCounter, unit: minute, requests_per_unit: 3}}
  - {key: alg, value: TokenBucket, rate_limit: {algorithm: TokenBucket, unit: minute, requests_per_unit: 3}}
  - {key: alg, value: GCRA, rate_limit: {algorithm: GCRA, unit: minute, requests_per_unit: 3}}
  - {key: default, rate_limit: {unit: minute, requests_per_unit: 1000}}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	inMemory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		return service.NewLimiter(c, opts...)
	}
	for name, extra := range map[string][]hotlimit.Option{"in memory": nil, "factory": {hotlimit.WithFactory(inMemory)}} {
		t.Run(name, func(t *testing.T) {
			var now atomic.Int64 // frozen: nothing refills
			now.Store(t0)
			s, err := New(cfg, WithClock(now.Load), WithLogger(slog.New(slog.DiscardHandler)),
				WithLimiterOptions(append([]hotlimit.Option{hotlimit.WithBurst(5)}, extra...)...))
			require.NoError(t, err)
			client := serve(t, s)
			passed := func(ds *rlext.RateLimitDescriptor) int {
				n := 0
				for range 7 {
					resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{ds}})
					require.NoError(t, err)
					if resp.OverallCode == ok {
						n++
					}
				}
				return n
			}
			for alg, want := range map[string]int{"FixedWindow": 3, "SlidingLog": 3, "SlidingCounter": 3, "TokenBucket": 5, "GCRA": 5} {
				assert.Equal(t, want, passed(desc("alg", alg)), alg)
			}
			own := desc("default", "client")
			own.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
			assert.Equal(t, 2, passed(own), "a descriptor's own limit of the rule's FixedWindow")
		})
	}
}

// TestDefaultBurstNamedInErrors: a default burst that a token bucket rule
// setting none cannot take (beyond tokenbucket.MaxBurst, or refilling in
// more than a year) was refused with the rule's name and the limiter's
// range alone, "m.yaml: m.alg_day: tokenbucket: burst 500 …", sending its
// reader to a rule that writes no burst; and a descriptor's own limit of 1
// a day was refused to the client the same way. Both errors now say the
// burst is the default's; a rule's own burst is not called a default.
func TestDefaultBurstNamedInErrors(t *testing.T) {
	parse := func(yaml string) *Config {
		d, err := ParseDomain("m.yaml", []byte("domain: m\ndescriptors:\n"+yaml))
		require.NoError(t, err)
		cfg, err := NewConfig(d)
		require.NoError(t, err)
		return cfg
	}
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	_, err := New(parse("  - {key: alg, value: day, rate_limit: {algorithm: TokenBucket, unit: day, requests_per_unit: 1}}\n"),
		quiet, WithLimiterOptions(hotlimit.WithBurst(500)))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "m.yaml: m.alg_day: with the default burst 500: tokenbucket: burst 500")

	_, err = New(parse("  - {key: alg, value: day, rate_limit: {algorithm: TokenBucket, unit: day, requests_per_unit: 1, burst: 500}}\n"),
		quiet, WithLimiterOptions(hotlimit.WithBurst(2)))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.NotContains(t, err.Error(), "default", "the rule's own burst")

	s, err := New(parse("  - {key: alg, value: own, rate_limit: {algorithm: GCRA, unit: hour, requests_per_unit: 1000, burst: 10}}\n"),
		quiet, WithLimiterOptions(hotlimit.WithBurst(500)))
	require.NoError(t, err)
	client := serve(t, s)
	own := desc("alg", "own")
	own.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_DAY}
	_, err = client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{own}})
	assert.ErrorContains(t, err, "descriptors[0].limit: with the default burst 500: gcra: ")
}
