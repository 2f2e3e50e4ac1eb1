package envoyrls

import (
	"strings"
	"testing"

	"github.com/hotlimit/hotlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetrics counts hits per rule under the reference's stat names: total,
// within, near (at most 20% left), over, and shadow mode, which also counts
// as over; labels name rules, never descriptor values.
func TestMetrics(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t, WithObserver(m))
	for i := range 22 { // hits: 10/hour
		h.call(t, "conf", 0, desc("hits", "v"+string(rune('a'+i%2))))
	}
	h.call(t, "conf", 3, desc("shadow", "s")) // 3 > 1: over, in shadow
	h.call(t, "conf", 0, desc("shadow", "s"))
	h.call(t, "conf", 0, desc("unlimited", "u"), desc("no_such_key", "x"))

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	want := `
# HELP ratelimit_service_rate_limit_near_limit Hits that passed leaving at most 20% of the limit (of the burst, for a rule with one), by rule.
# TYPE ratelimit_service_rate_limit_near_limit counter
ratelimit_service_rate_limit_near_limit{key="conf.hits"} 6
ratelimit_service_rate_limit_near_limit{key="conf.shadow"} 1
# HELP ratelimit_service_rate_limit_over_limit Hits over the limit, shadow mode included, by rule.
# TYPE ratelimit_service_rate_limit_over_limit counter
ratelimit_service_rate_limit_over_limit{key="conf.hits"} 2
ratelimit_service_rate_limit_over_limit{key="conf.shadow"} 3
# HELP ratelimit_service_rate_limit_shadow_mode Hits over a limit in shadow mode, answered OK, by rule.
# TYPE ratelimit_service_rate_limit_shadow_mode counter
ratelimit_service_rate_limit_shadow_mode{key="conf.hits"} 0
ratelimit_service_rate_limit_shadow_mode{key="conf.shadow"} 3
# HELP ratelimit_service_rate_limit_total_hits Hits asked for, by rule.
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{key="conf.hits"} 22
ratelimit_service_rate_limit_total_hits{key="conf.shadow"} 4
# HELP ratelimit_service_rate_limit_within_limit Hits that passed, by rule.
# TYPE ratelimit_service_rate_limit_within_limit counter
ratelimit_service_rate_limit_within_limit{key="conf.hits"} 20
ratelimit_service_rate_limit_within_limit{key="conf.shadow"} 1
`
	// 22 hits over two values of a 10/hour rule: each value passes 10,
	// leaving 9..0, of which 3 (2, 1, 0: at most 20%) are near, and is
	// over once.
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"ratelimit_service_rate_limit_total_hits", "ratelimit_service_rate_limit_over_limit",
		"ratelimit_service_rate_limit_near_limit", "ratelimit_service_rate_limit_within_limit",
		"ratelimit_service_rate_limit_shadow_mode"))
	m.ConfigLoaded(true)
	m.ConfigLoaded(false)
	assert.Equal(t, 1.0, testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(descLoadErr, prometheus.CounterValue, float64(m.loadErr.Load()))
	})))
}

// TestMetricsOfAnEventWithoutASource: an Event that names no Source, as an
// Observer may be handed from elsewhere, counts under the key "", never a
// panic.
func TestMetricsOfAnEventWithoutASource(t *testing.T) {
	m := NewMetrics()
	require.NotPanics(t, func() { m.Observe(hotlimit.Event{Outcome: hotlimit.OutcomeDenied, N: 2}) })
	c, ok := m.rules.Load("")
	require.True(t, ok)
	assert.EqualValues(t, 2, c.over.Load())
	assert.EqualValues(t, 2, c.total.Load())
}

// TestNearLimitIsAShareOfTheBurst: a rule of 5 per second with a burst of 3
// has at most 2 left after a hit, so only its last hit (0 left, at most 20%
// of 3) is near the limit, where 20% of the limit would make 1 left near too.
func TestNearLimitIsAShareOfTheBurst(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t, WithObserver(m))
	for range 4 { // passes 3, leaving 2, 1, 0; then over
		h.call(t, "algos", 0, desc("alg", "GCRABurst"))
	}
	c, ok := m.rules.Load("algos.alg_GCRABurst")
	if !ok {
		keys := []string{}
		m.rules.Range(func(k string, _ *ruleCounters) bool { keys = append(keys, k); return true })
		require.Failf(t, "no counters for the rule", "have %v", keys)
	}
	assert.EqualValues(t, 3, c.within.Load(), "within")
	assert.EqualValues(t, 1, c.near.Load(), "near: the hit that left 0")
	assert.EqualValues(t, 1, c.over.Load(), "over")
}
