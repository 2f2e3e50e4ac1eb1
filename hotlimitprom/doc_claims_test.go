package hotlimitprom_test

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/service"
)

// TestReportsAndNegativeTakesCountNoRequests: as the package documents, a
// Take of 0 counts as a decision on no requests, allowed or near_limit, and a
// Take of a negative n as a denied decision on no requests.
func TestReportsAndNegativeTakesCountNoRequests(t *testing.T) {
	cases := []struct {
		name      string
		n         int
		taken     int    // taken from the key before, so that the report is near the limit
		outcome   string // the one decision's
		decisions float64
	}{
		{"report on a fresh key", 0, 0, "allowed", 1},
		{"report near the limit", 0, 4, "near_limit", 1}, // Remaining 1 of 5: at most 20%
		{"negative n", -1, 0, "denied", 1},
		{"most negative n", math.MinInt, 0, "denied", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := hotlimitprom.New()
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(m))
			var now atomic.Int64
			svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: 60e9},
				hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
			require.NoError(t, err)
			defer svc.Close()
			if tc.taken > 0 {
				require.True(t, svc.Take("u", "a", tc.taken).Allowed)
			}
			before := gather(t, reg)
			svc.Take("u", "a", tc.n)
			after := gather(t, reg)
			for _, o := range []string{"allowed", "near_limit", "denied", "shadow_denied"} {
				d := after["hotlimit_decisions_total/"+o] - before["hotlimit_decisions_total/"+o]
				r := after["hotlimit_requests_total/"+o] - before["hotlimit_requests_total/"+o]
				if o == tc.outcome {
					assert.Equal(t, tc.decisions, d, "decisions %s", o)
				} else {
					assert.Zero(t, d, "decisions %s", o)
				}
				assert.Zero(t, r, "requests %s", o)
			}
		})
	}
}

// gather returns the default rule's counters of reg by "name/outcome".
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["rule"] == "default" {
				out[f.GetName()+"/"+labels["outcome"]] = s.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestTwoServicesShareOneMetricsByRuleName: two services reporting to one
// Metrics count their rules by name, so their "default" rules add up.
func TestTwoServicesShareOneMetricsByRuleName(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	var now atomic.Int64
	for _, limit := range []int{2, 5} {
		svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: 60e9},
			hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
		require.NoError(t, err)
		defer svc.Close()
		for range 6 {
			svc.Allow("u", "a")
		}
	}
	// Near the limit is Remaining at most 20% of it. Limit 2: 1 allowed,
	// 1 near (Remaining 0), 4 denied; limit 5: 3 allowed, 2 near
	// (Remaining 1 and 0), 1 denied.
	got := gather(t, reg)
	assert.Equal(t, 4.0, got["hotlimit_decisions_total/allowed"])
	assert.Equal(t, 3.0, got["hotlimit_decisions_total/near_limit"])
	assert.Equal(t, 5.0, got["hotlimit_decisions_total/denied"])
}

// TestWatchKeysAgainReplaces: a second WatchKeys with the same name replaces
// the first (one series, the new function's value), and a nil one removes it.
func TestWatchKeysAgainReplaces(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	m.WatchKeys("api", func() int { return 1 })
	m.WatchKeys("api", func() int { return 9 })
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_keys Keys held by a limiter or service.
# TYPE hotlimit_keys gauge
hotlimit_keys{limiter="api"} 9
`), "hotlimit_keys"))
	m.WatchKeys("api", nil)
	n, err := testutil.GatherAndCount(reg, "hotlimit_keys")
	require.NoError(t, err)
	assert.Zero(t, n)
}
