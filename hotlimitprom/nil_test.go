package hotlimitprom_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestANilMetricsCountsNothing: a program that makes its Metrics only when
// metrics are turned on hands a nil *Metrics to hotlimit.WithObserver when
// they are off, which hotlimit.WithObserver documents as reporting nothing.
// The service decides as without an observer, and a producer that holds
// the observer as given (envoyrls.WithObserver) and calls it finds that it
// counts nothing and never panics; a registry that gathers it gets nothing
// from it.
func TestANilMetricsCountsNothing(t *testing.T) {
	var m *hotlimitprom.Metrics // metrics turned off
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(m))
	require.NoError(t, err)
	limitertest.MetricsThatRecordNothing(t, svc, m)
	reg := prometheus.NewPedanticRegistry()
	require.NotPanics(t, func() { require.NoError(t, reg.Register(m)) })
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestAZeroMetricsIsRefusedByARegistry: a Metrics declared rather than made
// by New (a struct field of type hotlimitprom.Metrics, say) is refused by a
// registry with an error that says to call New, rather than crashing the
// program in the registry's own goroutine; it counts nothing and never
// panics in the meantime.
func TestAZeroMetricsIsRefusedByARegistry(t *testing.T) {
	var m hotlimitprom.Metrics
	reg := prometheus.NewPedanticRegistry()
	err := reg.Register(&m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hotlimitprom.New")
	require.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
		m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
		m.ObserveBackend("redis")
		m.WatchKeys("api", func() int { return 1 })
		ch := make(chan prometheus.Metric, 16)
		m.Collect(ch)
		close(ch)
		assert.Empty(t, ch)
	})
}

// TestAZeroMetricsIsRefusedThroughAWrappingRegisterer: a zero-value Metrics
// registered through prometheus.WrapRegistererWithPrefix or
// WrapRegistererWith, as a library handed a Registerer of its caller's
// often is, is refused with the same error as by the registry itself. The
// wrapper rebuilds every description it is sent, and one made by
// prometheus.NewInvalidDesc, which has no label names, crashed it with a nil
// dereference in the registry's goroutine, which no caller can recover.
func TestAZeroMetricsIsRefusedThroughAWrappingRegisterer(t *testing.T) {
	for name, wrap := range map[string]func(prometheus.Registerer) prometheus.Registerer{
		"prefix": func(r prometheus.Registerer) prometheus.Registerer {
			return prometheus.WrapRegistererWithPrefix("app_", r)
		},
		"labels": func(r prometheus.Registerer) prometheus.Registerer {
			return prometheus.WrapRegistererWith(prometheus.Labels{"app": "checkout"}, r)
		},
	} {
		var m hotlimitprom.Metrics
		reg := prometheus.NewPedanticRegistry()
		err := wrap(reg).Register(&m)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "hotlimitprom.New", name)
		n, err := testutil.GatherAndCount(reg)
		require.NoError(t, err, name)
		assert.Zero(t, n, name)
	}
}

// TestAZeroMetricsIsRefusedAsAnObserver: a zero-value Metrics given to a
// service, alone or among hotlimit.Observers, is refused with an error
// that says to call New, even when it is never registered (another
// Metrics is, say), rather than counting nothing; one made by New, or a
// nil *Metrics, is taken.
func TestAZeroMetricsIsRefusedAsAnObserver(t *testing.T) {
	var m hotlimitprom.Metrics
	cfg := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	for name, o := range map[string]hotlimit.Observer{"alone": &m, "among others": hotlimit.Observers(hotlimitprom.New(), &m)} {
		svc, err := service.New(cfg, hotlimit.WithObserver(o))
		require.Error(t, err, name)
		assert.Nil(t, svc, name)
		assert.Contains(t, err.Error(), "hotlimitprom.New", name)
	}
	var none *hotlimitprom.Metrics
	for _, o := range []*hotlimitprom.Metrics{hotlimitprom.New(), none} {
		_, err := service.New(cfg, hotlimit.WithObserver(o))
		assert.NoError(t, err)
	}
}
