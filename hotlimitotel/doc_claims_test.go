package hotlimitotel_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestReportsAndNegativeTakesCountNoRequests: as the package documents, a
// Take of 0 counts as a decision on no requests, allowed or near_limit, and a
// Take of a negative n as a denied decision on no requests.
func TestReportsAndNegativeTakesCountNoRequests(t *testing.T) {
	cases := []struct {
		name    string
		n       int
		taken   int    // taken from the key before, so that the report is near the limit
		outcome string // the one decision's
	}{
		{"report on a fresh key", 0, 0, "allowed"},
		{"report near the limit", 0, 4, "near_limit"}, // Remaining 1 of 5: at most 20%
		{"negative n", -1, 0, "denied"},
		{"most negative n", math.MinInt, 0, "denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, reader := setup(t)
			var now atomic.Int64
			svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: 60e9},
				hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
			require.NoError(t, err)
			defer svc.Close()
			if tc.taken > 0 {
				require.True(t, svc.Take("u", "a", tc.taken).Allowed)
			}
			before := sums(t, reader)
			svc.Take("u", "a", tc.n)
			after := sums(t, reader)
			for _, o := range []string{"allowed", "near_limit", "denied", "shadow_denied"} {
				series := "hotlimit.outcome=" + o + ",hotlimit.rule=default"
				d := after["hotlimit.decisions"][series] - before["hotlimit.decisions"][series]
				if o == tc.outcome {
					assert.Equal(t, int64(1), d, "decisions %s", o)
				} else {
					assert.Zero(t, d, "decisions %s", o)
				}
				assert.Equal(t, before["hotlimit.requests"][series], after["hotlimit.requests"][series], "requests %s", o)
			}
		})
	}
}

// TestTwoServicesShareOneMetricsByRuleName: two services reporting to one
// Metrics count their rules by name, so their "default" rules add up.
func TestTwoServicesShareOneMetricsByRuleName(t *testing.T) {
	m, reader := setup(t)
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
	assert.Equal(t, map[string]int64{
		"hotlimit.outcome=allowed,hotlimit.rule=default":    4,
		"hotlimit.outcome=near_limit,hotlimit.rule=default": 3,
		"hotlimit.outcome=denied,hotlimit.rule=default":     5,
	}, nonZero(sums(t, reader)["hotlimit.decisions"]))
}

// TestWatchKeysAgainReplaces: a second WatchKeys with the same name replaces
// the first (one point, the new function's value), and a nil one removes it.
func TestWatchKeysAgainReplaces(t *testing.T) {
	m, reader := setup(t)
	m.WatchKeys("api", func() int { return 1 })
	m.WatchKeys("api", func() int { return 9 })
	assert.Equal(t, map[string]int64{"hotlimit.limiter=api": 9}, sums(t, reader)["hotlimit.key.count"])
	m.WatchKeys("api", nil)
	assert.Empty(t, sums(t, reader)["hotlimit.key.count"])
}

// TestALimiterOfItsOwnReportsNoDecisions: as the package documents, an
// in-memory limiter used on its own ignores hotlimit.WithObserver, so its
// decisions, a denial at its key cap included, reach no instrument; its keys
// do, through WatchKeys.
func TestALimiterOfItsOwnReportsNoDecisions(t *testing.T) {
	m, reader := setup(t)
	var now atomic.Int64 // frozen: no key turns idle
	lim, err := tokenbucket.New(100, time.Minute, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1), hotlimit.WithObserver(m))
	require.NoError(t, err)
	m.WatchKeys("ip", lim.Len)
	assert.True(t, lim.Allow("ip:192.0.2.1"))
	assert.False(t, lim.Allow("ip:192.0.2.2"), "a new key at the cap")
	got := sums(t, reader)
	assert.Empty(t, nonZero(got["hotlimit.decisions"]))
	assert.Empty(t, nonZero(got["hotlimit.requests"]))
	assert.Equal(t, map[string]int64{"hotlimit.limiter=ip": 1}, got["hotlimit.key.count"])
}
