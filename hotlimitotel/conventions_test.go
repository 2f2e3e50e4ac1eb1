package hotlimitotel_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/service"
)

// TestInstrumentsFollowTheSemanticConventions: each instrument is named
// under the hotlimit namespace, counters of countable things plural, the
// keys held an asynchronous UpDownCounter (they add up across limiters)
// named with .count; units are annotations in braces; descriptions are
// sentences; attribute names are namespaced too.
func TestInstrumentsFollowTheSemanticConventions(t *testing.T) {
	m, reader := setup(t)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	require.NoError(t, m.WatchKeys("api", func() int { return 3 }))

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	type want struct {
		unit      string
		monotonic bool
		attrs     []string
	}
	wants := map[string]want{
		"hotlimit.decisions": {"{decision}", true, []string{"hotlimit.outcome", "hotlimit.rule"}},
		"hotlimit.requests":  {"{request}", true, []string{"hotlimit.outcome", "hotlimit.rule"}},
		"hotlimit.fallbacks": {"{fallback}", true, []string{"hotlimit.backend", "hotlimit.fallback.reason"}},
		"hotlimit.key.count": {"{key}", false, []string{"hotlimit.limiter"}},
	}
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			w, ok := wants[mt.Name]
			if !assert.True(t, ok, "unexpected instrument %s", mt.Name) {
				continue
			}
			seen++
			assert.Equal(t, w.unit, mt.Unit, mt.Name)
			assert.True(t, strings.HasPrefix(mt.Description, "Number of "), "%s: %q", mt.Name, mt.Description)
			assert.True(t, strings.HasSuffix(mt.Description, "."), "%s: %q", mt.Name, mt.Description)
			sum, ok := mt.Data.(metricdata.Sum[int64])
			if !assert.True(t, ok, "%s is a sum, got %T", mt.Name, mt.Data) {
				continue
			}
			assert.Equal(t, w.monotonic, sum.IsMonotonic, mt.Name)
			assert.Equal(t, metricdata.CumulativeTemporality, sum.Temporality, mt.Name)
			require.Len(t, sum.DataPoints, 1, mt.Name)
			var keys []string
			for _, kv := range sum.DataPoints[0].Attributes.ToSlice() {
				keys = append(keys, string(kv.Key))
			}
			assert.Equal(t, w.attrs, keys, mt.Name)
		}
	}
	assert.Equal(t, len(wants), seen)
}

// countingMeter is a meter that counts the callbacks registered and not
// yet unregistered.
type countingMeter struct {
	metric.Meter
	live atomic.Int64
}

func (c *countingMeter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	reg, err := c.Meter.RegisterCallback(f, instruments...)
	if err != nil {
		return nil, err
	}
	c.live.Add(1)
	return &countingRegistration{Registration: reg, c: c}, nil
}

type countingRegistration struct {
	metric.Registration
	c    *countingMeter
	done atomic.Bool
}

func (r *countingRegistration) Unregister() error {
	if r.done.CompareAndSwap(false, true) {
		r.c.live.Add(-1)
	}
	return r.Registration.Unregister()
}

// TestKeysCallbackIsRegisteredOnlyWhileWatching: the callback of
// hotlimit.key.count is registered with the first function watched,
// unregistered with the last, and by Close; once closed, no function given
// to WatchKeys is called again.
func TestKeysCallbackIsRegisteredOnlyWhileWatching(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	meter := &countingMeter{Meter: provider.Meter("hotlimit")}
	m, err := hotlimitotel.New(meter)
	require.NoError(t, err)
	assert.Zero(t, meter.live.Load(), "nothing watched, no callback")

	var calls atomic.Int64
	keys := func() int { calls.Add(1); return 5 }
	require.NoError(t, m.WatchKeys("a", keys))
	require.NoError(t, m.WatchKeys("b", keys))
	assert.EqualValues(t, 1, meter.live.Load(), "one callback for every function")
	assert.Equal(t, map[string]int64{"hotlimit.limiter=a": 5, "hotlimit.limiter=b": 5}, sums(t, reader)["hotlimit.key.count"])

	require.NoError(t, m.WatchKeys("a", nil))
	assert.EqualValues(t, 1, meter.live.Load())
	require.NoError(t, m.WatchKeys("b", nil))
	assert.Zero(t, meter.live.Load(), "the last function removed, the callback goes")
	assert.Empty(t, sums(t, reader)["hotlimit.key.count"])

	require.NoError(t, m.WatchKeys("a", keys))
	assert.EqualValues(t, 1, meter.live.Load())
	require.NoError(t, m.Close())
	assert.Zero(t, meter.live.Load(), "Close unregisters the callback")
	require.NoError(t, m.Close(), "closing twice does nothing")
	require.NoError(t, m.WatchKeys("c", keys))
	assert.Zero(t, meter.live.Load(), "a closed Metrics registers nothing")
	before := calls.Load()
	assert.Empty(t, sums(t, reader)["hotlimit.key.count"])
	assert.Equal(t, before, calls.Load(), "no watched function is called once closed")

	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
	assert.EqualValues(t, 1, sums(t, reader)["hotlimit.decisions"]["hotlimit.outcome=denied,hotlimit.rule=default"], "the counters keep recording")
}

// TestWatchKeysRacesCollection: watching and unwatching while the reader
// collects neither deadlocks nor races.
func TestWatchKeysRacesCollection(t *testing.T) {
	m, reader := setup(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				var rm metricdata.ResourceMetrics
				assert.NoError(t, reader.Collect(context.Background(), &rm))
			}
		}
	}()
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for i := range rounds {
		assert.NoError(t, m.WatchKeys("a", func() int { return i }))
		assert.NoError(t, m.WatchKeys("a", nil))
	}
	close(stop)
	<-done
}

func TestObserveFallbackDoesNotAllocate(t *testing.T) {
	m, _ := setup(t)
	f := hotlimit.Fallback{Backend: "redis", Reason: "timeout"}
	m.ObserveFallback(f)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { m.ObserveFallback(f) }))
}

// TestServiceDecisionsDoNotAllocate: a service reporting to the metrics
// allocates nothing per decision once its rules have been seen, for a rule
// of one limit (Allow and Take), one of several, one in shadow mode and an
// allow-list, and for TakeWith.
func TestServiceDecisionsDoNotAllocate(t *testing.T) {
	m, _ := setup(t)
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "TokenBucket", "limit": 1000000, "window": "1s"}],
	  "users":   {"partner": [{"algorithm": "Unlimited"}]},
	  "apis":    {"pay": [{"algorithm": "TokenBucket", "limit": 1000000, "window": "1s"},
	                      {"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]}
	}`))
	require.NoError(t, err)
	var now atomic.Int64
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	require.NoError(t, err)
	plan := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1000000, Window: time.Second}
	for name, decide := range map[string]func(){
		"Allow":      func() { svc.Allow("alice", "GET /") },
		"Take":       func() { svc.Take("alice", "GET /", 2) },
		"several":    func() { svc.Take("alice", "pay", 1) },
		"allow-list": func() { svc.Allow("partner", "GET /") },
		"TakeWith":   func() { _, _ = svc.TakeWith("alice", "GET /", plan, 1) },
	} {
		decide()
		assert.Zero(t, testing.AllocsPerRun(200, decide), name)
	}
}
