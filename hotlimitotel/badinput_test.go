package hotlimitotel_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
)

// TestBadInputToMetrics: New refuses a nil meter; every method of a nil, a
// zero and a made Metrics, given events without a Source, outcomes and
// counts out of range, names that are not UTF-8 and nil functions, and
// called after Close (twice), neither panics nor fails but as documented:
// the zero Metrics says to call New.
func TestBadInputToMetrics(t *testing.T) {
	m, err := hotlimitotel.New(nil)
	assert.Error(t, err)
	assert.Nil(t, m)
	reader := sdkmetric.NewManualReader()
	sdk, err := hotlimitotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("hotlimit"))
	require.NoError(t, err)
	nop, err := hotlimitotel.New(noop.NewMeterProvider().Meter(""))
	require.NoError(t, err)
	cases := []struct {
		name string
		m    *hotlimitotel.Metrics
		made bool
	}{{"nil", nil, true}, {"zero", &hotlimitotel.Metrics{}, false}, {"sdk", sdk, true}, {"noop", nop, true}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			require.NotPanics(t, func() {
				for range 2 {
					m.Observe(hotlimit.Event{})
					m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "\xff"}, Outcome: 200, N: math.MinInt,
						Decision: hotlimit.Decision{Limit: math.MinInt, Remaining: math.MaxInt}})
					m.ObserveBackend("")
					m.ObserveBackend("\xff")
					m.ObserveFallback(hotlimit.Fallback{Backend: "\xfe", Reason: "\xfd"})
					m.WatchKeys("\xff", func() int { return math.MinInt })
					m.WatchKeys("", nil)
					if tc.made {
						assert.NoError(t, m.CheckObserver())
						assert.NoError(t, m.Close())
					} else {
						assert.Error(t, m.CheckObserver())
						assert.Error(t, m.Close())
					}
				}
			})
		})
	}
}
