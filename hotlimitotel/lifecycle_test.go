package hotlimitotel_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
)

var temporalities = map[string]metricdata.Temporality{
	"cumulative": metricdata.CumulativeTemporality,
	"delta":      metricdata.DeltaTemporality,
}

// TestClosingOneOfTwoMetricsOnAMeterLowersNoCounter: two Metrics open on
// one meter report one set of counts, so closing one takes nothing out of
// them: a cumulative reader never sees the counter go down, and a delta
// reader never gets a negative difference.
func TestClosingOneOfTwoMetricsOnAMeterLowersNoCounter(t *testing.T) {
	for name, temp := range temporalities {
		t.Run("temporality="+name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temp }))
			provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
			a, err := hotlimitotel.New(provider.Meter("hotlimit"))
			require.NoError(t, err)
			b, err := hotlimitotel.New(provider.Meter("hotlimit"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() })
			e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 2}
			key := "hotlimit.outcome=denied,hotlimit.rule=default"
			a.Observe(e)
			a.Observe(e)
			b.Observe(e)
			got := sums(t, reader)
			assert.EqualValues(t, 3, got["hotlimit.decisions"][key])
			assert.EqualValues(t, 6, got["hotlimit.requests"][key])

			require.NoError(t, a.Close())
			b.Observe(e)
			got = sums(t, reader)
			want := map[metricdata.Temporality]int64{metricdata.CumulativeTemporality: 4, metricdata.DeltaTemporality: 1}[temp]
			assert.EqualValues(t, want, got["hotlimit.decisions"][key], "a's decisions stay counted after a closes")
			assert.EqualValues(t, 2*want, got["hotlimit.requests"][key])
		})
	}
}

// TestClosingOneOfTwoMetricsDropsItsWatchedKeys: closing a Metrics while
// another stays open on its meter keeps the callback registered, but the
// keys of the functions the closed one watched leave the collections at
// once, and those functions are never called again: a service stopped with
// its Metrics shows no keys held, and is not kept alive by the meter.
func TestClosingOneOfTwoMetricsDropsItsWatchedKeys(t *testing.T) {
	a, b, reader := twoOnOneMeter(t)
	t.Cleanup(func() { _ = b.Close() })
	var aCalls atomic.Int64
	a.WatchKeys("stopped", func() int { aCalls.Add(1); return 4 })
	b.WatchKeys("running", func() int { return 2 })
	require.Equal(t, map[string]int64{"hotlimit.limiter=stopped": 4, "hotlimit.limiter=running": 2}, sums(t, reader)["hotlimit.key.count"])
	require.EqualValues(t, 1, aCalls.Load())

	require.NoError(t, a.Close())
	assert.Equal(t, map[string]int64{"hotlimit.limiter=running": 2}, sums(t, reader)["hotlimit.key.count"])
	assert.EqualValues(t, 1, aCalls.Load(), "the closed Metrics' function is not called again")
}

// TestCloseLastThenNewRestartsTheCounts pins what the package documents:
// once the last Metrics on a meter has closed, a new one on it counts from
// zero; a reader that collected in between gets the new counts right,
// cumulative or delta.
func TestCloseLastThenNewRestartsTheCounts(t *testing.T) {
	for name, temp := range temporalities {
		t.Run("temporality="+name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temp }))
			provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
			m, err := hotlimitotel.New(provider.Meter("hotlimit"))
			require.NoError(t, err)
			e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1}
			m.Observe(e)
			m.Observe(e)
			key := "hotlimit.outcome=allowed,hotlimit.rule=default"
			assert.EqualValues(t, 2, sums(t, reader)["hotlimit.decisions"][key])
			require.NoError(t, m.Close())
			assert.Empty(t, sums(t, reader))
			// The provider hands out one meter per name: this is the same meter.
			n, err := hotlimitotel.New(provider.Meter("hotlimit"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })
			n.Observe(e)
			assert.EqualValues(t, 1, sums(t, reader)["hotlimit.decisions"][key])
			n.Observe(e)
			want := map[metricdata.Temporality]int64{metricdata.CumulativeTemporality: 2, metricdata.DeltaTemporality: 1}[temp]
			assert.EqualValues(t, want, sums(t, reader)["hotlimit.decisions"][key])
		})
	}
}

// TestSDKAddsUpObservationsOfOneSeries pins the SDK behaviour the package
// relies on where two meters' Metrics, or a caller's own callback, report
// the same instrument and attributes: observed twice in one callback, or
// from two callbacks, the values add up.
func TestSDKAddsUpObservationsOfOneSeries(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	meter := provider.Meter("hotlimit")
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("k", "v")))
	c1, err := meter.Int64ObservableCounter("c")
	require.NoError(t, err)
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(c1, 10, attrs)
		o.ObserveInt64(c1, 30, attrs)
		return nil
	}, c1)
	require.NoError(t, err)
	c2, err := meter.Int64ObservableCounter("c")
	require.NoError(t, err)
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(c2, 5, attrs)
		return nil
	}, c2)
	require.NoError(t, err)
	assert.EqualValues(t, 45, sums(t, reader)["c"]["k=v"])
}

// TestNoopMeter: on the no-op provider's meter (what the OTel API hands
// out before an SDK is installed) everything works and reports nothing.
func TestNoopMeter(t *testing.T) {
	m, err := hotlimitotel.New(noop.NewMeterProvider().Meter("hotlimit"))
	require.NoError(t, err)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	m.WatchKeys("api", func() int { return 1 })
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
}

// TestProviderShutDownWhileObserving: Observe keeps counting while the
// provider shuts down, and Close after the shutdown returns no error.
func TestProviderShutDownWhileObserving(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1}
		m.Observe(e)
		close(started)
		for range 1000 {
			m.Observe(e)
		}
	}()
	<-started
	require.NoError(t, provider.Shutdown(context.Background()))
	<-done
	assert.NoError(t, m.Close())
}

// TestCloseDuringCollection: a Close started from inside a collection (by
// a watched function, on another goroutine) waits for the collection,
// which still reports m, and unregisters the callback after it.
func TestCloseDuringCollection(t *testing.T) {
	m, reader := setup(t)
	var closed sync.WaitGroup
	var closeErr error
	m.WatchKeys("api", func() int {
		closed.Go(func() { closeErr = m.Close() })
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
		return 7
	})
	got := sums(t, reader)
	assert.EqualValues(t, 7, got["hotlimit.key.count"]["hotlimit.limiter=api"])
	closed.Wait()
	require.NoError(t, closeErr)
	assert.Empty(t, sums(t, reader), "closed during the last collection, read no more")
	m.WatchKeys("api", func() int { return 1 })
	assert.Empty(t, sums(t, reader), "WatchKeys after Close does nothing")
}

// TestCollectionRacesObserve: collections while decisions and new rules
// come never see a count go down, and the last one holds every decision.
// The decisions start once the reader is collecting, and go on until it has
// finished collections begun after them, so that collections overlap them
// however the goroutines are scheduled.
func TestCollectionRacesObserve(t *testing.T) {
	m, reader := setup(t)
	per := 2000
	if testing.Short() {
		per = 200
	}
	rules := []string{"a", "b", "c"}
	var collections atomic.Int64
	var gone atomic.Bool // the collector has returned
	running := make(chan struct{})
	var runningOnce sync.Once
	stop := make(chan struct{})
	var collector, observers sync.WaitGroup
	collector.Go(func() {
		defer func() {
			gone.Store(true)
			runningOnce.Do(func() { close(running) })
		}()
		last := map[string]int64{}
		for {
			var rm metricdata.ResourceMetrics
			if !assert.NoError(t, reader.Collect(context.Background(), &rm)) {
				return
			}
			for _, sm := range rm.ScopeMetrics {
				for _, mt := range sm.Metrics {
					if mt.Name != "hotlimit.decisions" {
						continue
					}
					for _, p := range mt.Data.(metricdata.Sum[int64]).DataPoints {
						a := attrs(p.Attributes)
						assert.GreaterOrEqual(t, p.Value, last[a], a)
						last[a] = p.Value
					}
				}
			}
			collections.Add(1)
			runningOnce.Do(func() { close(running) })
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	<-running
	from := collections.Load()
	var made [3]int64 // decisions of each rule
	for r, rule := range rules {
		observers.Go(func() {
			// Collections finished since from, one of which may have
			// begun before the first decision: two, so that one began
			// and ended among them.
			for ; made[r] < int64(per) || collections.Load()-from < 2 && !gone.Load(); made[r]++ {
				m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: rule}, Outcome: hotlimit.OutcomeDenied, N: 1})
			}
		})
	}
	observers.Wait()
	close(stop)
	collector.Wait()
	assert.GreaterOrEqual(t, collections.Load()-from, int64(2), "collections during the decisions")
	got := sums(t, reader)["hotlimit.decisions"]
	for r, rule := range rules {
		assert.EqualValues(t, made[r], got["hotlimit.outcome=denied,hotlimit.rule="+rule], rule)
	}
}

// taggedMeter is a caller's own Meter wrapper whose value is not
// comparable: it holds a slice beside the Meter it wraps.
type taggedMeter struct {
	metric.Meter
	tags []string
}

// TestAMeterThatIsNotComparableCountsApart: as the package documentation
// says, two Metrics on a meter whose value is not comparable count apart,
// each with a callback of its own that the SDK adds up, so closing one
// takes its counts out of the sum; the same wrapper behind a pointer is one
// meter, whose Metrics share their counts, and closing one lowers nothing.
func TestAMeterThatIsNotComparableCountsApart(t *testing.T) {
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 2}
	key := "hotlimit.outcome=denied,hotlimit.rule=default"
	for name, tc := range map[string]struct {
		wrap       func(metric.Meter) metric.Meter
		afterClose int64
	}{
		"value":   {func(m metric.Meter) metric.Meter { return taggedMeter{Meter: m, tags: []string{"a"}} }, 1},
		"pointer": {func(m metric.Meter) metric.Meter { return &taggedMeter{Meter: m, tags: []string{"a"}} }, 3},
	} {
		t.Run(name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
			meter := tc.wrap(provider.Meter("hotlimit"))
			a, err := hotlimitotel.New(meter)
			require.NoError(t, err)
			b, err := hotlimitotel.New(meter)
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() })
			a.Observe(e)
			a.Observe(e)
			b.Observe(e)
			assert.EqualValues(t, 3, sums(t, reader)["hotlimit.decisions"][key], "both Metrics' decisions are reported")
			require.NoError(t, a.Close())
			assert.EqualValues(t, tc.afterClose, sums(t, reader)["hotlimit.decisions"][key], "after one of them closes")
		})
	}
}

// TestClosingOneOfTwoMetricsTwiceKeepsTheOtherReporting: a second Close of
// one Metrics does nothing, so it does not count as the other's Close: the
// callback stays registered while the other is open, and its decisions and
// those of the closed one keep being read.
func TestClosingOneOfTwoMetricsTwiceKeepsTheOtherReporting(t *testing.T) {
	a, b, reader := twoOnOneMeter(t)
	t.Cleanup(func() { _ = b.Close() })
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1}
	a.Observe(e)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	b.Observe(e)
	b.WatchKeys("api", func() int { return 3 })
	got := sums(t, reader)
	assert.EqualValues(t, 2, got["hotlimit.decisions"]["hotlimit.outcome=denied,hotlimit.rule=default"])
	assert.Equal(t, map[string]int64{"hotlimit.limiter=api": 3}, got["hotlimit.key.count"])
}

// TestTheFirstOutcomePastTheNamedFourCountsAsUnknown: an Event whose
// Outcome is one past OutcomeShadowDenied names none, and counts as
// "unknown", never a panic, as any other that names none.
func TestTheFirstOutcomePastTheNamedFourCountsAsUnknown(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeShadowDenied + 1, N: 2})
	})
	got := sums(t, reader)
	assert.EqualValues(t, 1, got["hotlimit.decisions"]["hotlimit.outcome=unknown,hotlimit.rule=default"])
	assert.EqualValues(t, 2, got["hotlimit.requests"]["hotlimit.outcome=unknown,hotlimit.rule=default"])
}
