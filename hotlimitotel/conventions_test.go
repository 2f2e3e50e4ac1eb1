package hotlimitotel_test

import (
	"context"
	"strconv"
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
	m.WatchKeys("api", func() int { return 3 })

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
			require.NotEmpty(t, sum.DataPoints, mt.Name)
			for _, p := range sum.DataPoints {
				var keys []string
				for _, kv := range p.Attributes.ToSlice() {
					keys = append(keys, string(kv.Key))
				}
				assert.Equal(t, w.attrs, keys, mt.Name)
			}
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

// TestCloseUnregistersTheCallback: New registers the instruments' one
// callback and Close unregisters it: a collection then reads nothing from
// the Metrics, and no function given to WatchKeys is called again.
func TestCloseUnregistersTheCallback(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	meter := &countingMeter{Meter: provider.Meter("hotlimit")}
	m, err := hotlimitotel.New(meter)
	require.NoError(t, err)
	assert.EqualValues(t, 1, meter.live.Load(), "one callback for the four instruments")

	var calls atomic.Int64
	keys := func() int { calls.Add(1); return 5 }
	m.WatchKeys("a", keys)
	m.WatchKeys("b", keys)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
	assert.EqualValues(t, 1, meter.live.Load())
	got := sums(t, reader)
	assert.Equal(t, map[string]int64{"hotlimit.limiter=a": 5, "hotlimit.limiter=b": 5}, got["hotlimit.key.count"])
	assert.EqualValues(t, 1, got["hotlimit.decisions"]["hotlimit.outcome=denied,hotlimit.rule=default"])
	m.WatchKeys("a", nil)
	assert.Equal(t, map[string]int64{"hotlimit.limiter=b": 5}, sums(t, reader)["hotlimit.key.count"])

	require.NoError(t, m.Close())
	assert.Zero(t, meter.live.Load(), "Close unregisters the callback")
	require.NoError(t, m.Close(), "closing twice does nothing")
	m.WatchKeys("c", keys)
	before := calls.Load()
	assert.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
	})
	assert.Empty(t, sums(t, reader), "nothing is read from a closed Metrics")
	assert.Equal(t, before, calls.Load(), "no watched function is called once closed")
}

// TestTwoMetricsOnOneMeterAddUp: two Metrics on one Meter report into the
// same instruments, and what both report under the same attributes adds up.
func TestTwoMetricsOnOneMeterAddUp(t *testing.T) {
	a, b, reader := twoOnOneMeter(t)
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 2}
	a.Observe(e)
	b.Observe(e)
	b.Observe(e)
	a.WatchKeys("api", func() int { return 1 })
	b.WatchKeys("api", func() int { return 2 })
	got := sums(t, reader)
	assert.EqualValues(t, 3, got["hotlimit.decisions"]["hotlimit.outcome=allowed,hotlimit.rule=default"])
	assert.EqualValues(t, 6, got["hotlimit.requests"]["hotlimit.outcome=allowed,hotlimit.rule=default"])
	assert.EqualValues(t, 3, got["hotlimit.key.count"]["hotlimit.limiter=api"])
}

// TestWatchKeysRacesCollection: watching, unwatching and new rules while
// the reader collects neither deadlock nor race. The calls start once the
// reader is collecting, and go on until it has finished collections begun
// after them, so that collections overlap them however the goroutines are
// scheduled.
func TestWatchKeysRacesCollection(t *testing.T) {
	m, reader := setup(t)
	var collections atomic.Int64
	running := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var rm metricdata.ResourceMetrics
			assert.NoError(t, reader.Collect(context.Background(), &rm))
			if collections.Add(1) == 1 {
				close(running)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	<-running
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	from := collections.Load()
	// Collections finished since from, one of which may have begun
	// before the first call: two, so that one began and ended among them.
	for i := 0; i < rounds || collections.Load()-from < 2; i++ {
		keys := i
		m.WatchKeys("a", func() int { return keys })
		m.WatchKeys("a", nil)
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: strconv.Itoa(i % 7)}, Outcome: hotlimit.OutcomeAllowed, N: 1})
	}
	close(stop)
	<-done
	assert.GreaterOrEqual(t, collections.Load()-from, int64(2), "collections during the calls")
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

// TestDeltaTemporality: a reader that exports deltas (as some backends
// want) gets, from the cumulative counts the callback reports, what
// happened since its last collection.
func TestDeltaTemporality(t *testing.T) {
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
		return metricdata.DeltaTemporality
	}))
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 3}
	key := "hotlimit.outcome=denied,hotlimit.rule=default"
	m.Observe(e)
	m.Observe(e)
	assert.EqualValues(t, 2, sums(t, reader)["hotlimit.decisions"][key])
	m.Observe(e)
	got := sums(t, reader)
	assert.EqualValues(t, 1, got["hotlimit.decisions"][key], "one decision since the last collection")
	assert.EqualValues(t, 3, got["hotlimit.requests"][key])
}
