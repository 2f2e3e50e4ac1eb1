package hotlimitotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestANilMetricsCountsNothing: a program that makes its Metrics only when
// metrics are turned on (or that drops New's error, which comes with a nil
// *Metrics) hands a nil *Metrics to hotlimit.WithObserver, which that
// option documents as reporting nothing. The service decides as without an
// observer, and a producer that holds the observer as given
// (envoyrls.WithObserver) and calls it finds that it records nothing and
// never panics; closing it does nothing.
func TestANilMetricsCountsNothing(t *testing.T) {
	m, err := hotlimitotel.New(nil)
	require.Error(t, err)
	require.Nil(t, m)
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(m))
	require.NoError(t, err)
	limitertest.MetricsThatRecordNothing(t, svc, m)
	require.NotPanics(t, func() { assert.NoError(t, m.Close()) })
}

// TestAZeroMetricsIsRefusedWhereItIsGiven: a Metrics declared rather than
// made by New (a struct field of type hotlimitotel.Metrics, say) has no
// meter to record into. A service given it, alone or among
// hotlimit.Observers, is refused with an error that says to call New, at
// once rather than after a day of empty dashboards; handed to code that
// calls it without asking, it records nothing and never panics, and its
// Close says to call New too.
func TestAZeroMetricsIsRefusedWhereItIsGiven(t *testing.T) {
	var m hotlimitotel.Metrics
	cfg := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	other := hotlimit.ObserverFunc(func(hotlimit.Event) {})
	for name, o := range map[string]hotlimit.Observer{
		"alone":        &m,
		"among others": hotlimit.Observers(other, &m),
		"nested":       hotlimit.Observers(other, hotlimit.Observers(other, &m)),
	} {
		svc, err := service.New(cfg, hotlimit.WithObserver(o))
		require.Error(t, err, name)
		assert.Nil(t, svc, name)
		assert.Contains(t, err.Error(), "hotlimitotel.New", name)
	}
	require.ErrorContains(t, m.CheckObserver(), "hotlimitotel.New")
	require.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
		m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
		m.ObserveBackend("redis")
		m.WatchKeys("api", func() int { return 1 })
	})
	assert.ErrorContains(t, m.Close(), "hotlimitotel.New")
}

// TestAMadeOrNilMetricsIsAnObserver: CheckObserver finds nothing wrong with
// a Metrics made by New, nor with a nil *Metrics, which a program whose
// metrics are off hands over on purpose; a service takes both.
func TestAMadeOrNilMetricsIsAnObserver(t *testing.T) {
	made, err := hotlimitotel.New(noop.NewMeterProvider().Meter("t"))
	require.NoError(t, err)
	defer made.Close()
	var none *hotlimitotel.Metrics
	for _, m := range []*hotlimitotel.Metrics{made, none} {
		assert.NoError(t, m.CheckObserver())
		_, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(m))
		assert.NoError(t, err)
	}
}
