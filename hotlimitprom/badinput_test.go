package hotlimitprom_test

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
)

// unchecked is a collector that sends no description, which a registry
// takes without checking and collects at every Gather.
type unchecked struct{ prometheus.Collector }

func (unchecked) Describe(chan<- *prometheus.Desc) {}

// feed gives m one of everything it counts, with names that are not UTF-8.
func feed(m *hotlimitprom.Metrics) {
	m.Observe(hotlimit.Event{}) // no Source: as from a caller's own producer
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "\xff"}, Outcome: 200, N: math.MinInt,
		Decision: hotlimit.Decision{Limit: math.MinInt, Remaining: math.MaxInt}})
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: strings.Repeat("r", 1<<16)}, Outcome: hotlimit.OutcomeAllowed, N: math.MaxInt})
	m.ObserveBackend("")
	m.ObserveBackend("\xff")
	m.ObserveFallback(hotlimit.Fallback{Backend: "\xfe", Reason: "\xfd"})
	m.WatchKeys("\xff", func() int { return math.MinInt })
	m.WatchKeys("", func() int { return math.MaxInt })
	m.WatchKeys("gone", func() int { return 1 })
	m.WatchKeys("gone", nil)
	m.WatchKeys("never", nil)
}

// collect calls m.Collect and returns what it sent.
func collect(m prometheus.Collector) []prometheus.Metric {
	ch := make(chan prometheus.Metric, 1024)
	m.Collect(ch)
	close(ch)
	var out []prometheus.Metric
	for x := range ch {
		out = append(out, x)
	}
	return out
}

// TestBadInputToMetrics: every method of a nil, a zero and a made Metrics,
// given events, names and options a careless caller could, neither panics
// nor exports anything a registry refuses, but for the zero Metrics, which
// a registry refuses at Register with an error saying to call New.
func TestBadInputToMetrics(t *testing.T) {
	cases := []struct {
		name     string
		m        *hotlimitprom.Metrics
		check    error // CheckObserver's
		register bool  // a registry takes it
	}{
		{"nil", nil, nil, true},
		{"zero", &hotlimitprom.Metrics{}, assert.AnError, false},
		{"made", hotlimitprom.New(), nil, true},
		{"nil options, given twice", hotlimitprom.New(nil, hotlimitprom.WithNamespace("a"), hotlimitprom.WithNamespace(""),
			hotlimitprom.WithConstLabels(prometheus.Labels{"app": "x"}), hotlimitprom.WithConstLabels(nil)), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NotPanics(t, func() { feed(tc.m) })
			if tc.check == nil {
				assert.NoError(t, tc.m.CheckObserver())
			} else {
				assert.Error(t, tc.m.CheckObserver())
			}
			reg := prometheus.NewPedanticRegistry()
			if !tc.register {
				assert.Error(t, reg.Register(tc.m))
				return
			}
			require.NoError(t, reg.Register(tc.m))
			_, err := reg.Gather()
			assert.NoError(t, err)
		})
	}
}

// TestBadNamesMakeCollectReportNotPanic: a namespace or constant labels
// that Prometheus refuses made Collect panic (MustNewConstMetric) once a
// rule had been observed or a limiter watched. A registry refuses such a
// Metrics at Register, but one wrapped in an unchecked collector is
// collected all the same, and the panic was in the registry's goroutine,
// crashing the program at the first scrape. Collect now sends invalid
// metrics carrying Prometheus's error, which Gather returns.
func TestBadNamesMakeCollectReportNotPanic(t *testing.T) {
	cases := []struct {
		name string
		opts []hotlimitprom.Option
		want string
	}{
		{"reserved label name", []hotlimitprom.Option{hotlimitprom.WithConstLabels(prometheus.Labels{"__name__": "x"})}, "is not a valid label name"},
		{"namespace not UTF-8", []hotlimitprom.Option{hotlimitprom.WithNamespace("\xff")}, "is not a valid metric name"},
		{"empty label name", []hotlimitprom.Option{hotlimitprom.WithConstLabels(prometheus.Labels{"": "x"})}, "is not a valid label name"},
		{"label value not UTF-8", []hotlimitprom.Option{hotlimitprom.WithConstLabels(prometheus.Labels{"app": "\xff"})}, "is not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := hotlimitprom.New(tc.opts...)
			assert.ErrorContains(t, prometheus.NewRegistry().Register(m), tc.want, "a registry refuses it")
			feed(m)
			var got []prometheus.Metric
			require.NotPanics(t, func() { got = collect(m) })
			require.NotEmpty(t, got)
			failed := 0
			for _, x := range got {
				if err := x.Write(new(dto.Metric)); err != nil {
					assert.ErrorContains(t, err, tc.want)
					failed++
				}
			}
			assert.Positive(t, failed, "the metrics carry the error")
			reg := prometheus.NewRegistry()
			require.NoError(t, reg.Register(unchecked{m}))
			_, err := reg.Gather()
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
