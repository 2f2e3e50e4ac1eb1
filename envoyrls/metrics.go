package envoyrls

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/puzpuzpuz/xsync/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Metrics counts decisions per rule under the reference server's stat names,
// as Prometheus counters labelled by the rule's key (such as "rl.foo.bar"),
// which the configuration bounds: never a label per descriptor value.
//
//	ratelimit_service_rate_limit_total_hits{key,domain,key1,key2}    hits asked for
//	ratelimit_service_rate_limit_over_limit{key,domain,key1,key2}    hits over the limit (shadow mode included)
//	ratelimit_service_rate_limit_near_limit{key,domain,key1,key2}    hits past 80% of the limit (or burst)
//	ratelimit_service_rate_limit_within_limit{key,domain,key1,key2}  hits that passed
//	ratelimit_service_rate_limit_shadow_mode{key,domain,key1,key2}   hits over a limit in shadow mode, answered OK
//	ratelimit_service_config_load_success                            configurations put in force
//	ratelimit_service_config_load_error                              configurations rejected
//	ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}  requests decided or refused (gRPC and /json)
//	ratelimit_service_should_rate_limit_error{err_type}              requests answered with an error: redis_error
//	                                                                 when the backend could not decide in time
//	                                                                 (Unavailable, DeadlineExceeded, Canceled),
//	                                                                 service_error for the others (a request
//	                                                                 refused as invalid, mostly)
//	hotlimit_fallbacks_total{backend, reason}                        decisions the backend (Redis) could not make,
//	                                                                 by reason: timeout, breaker_open, canceled,
//	                                                                 clock_range, error; each at 0 from the first
//	                                                                 limiter built on the backend
//	hotlimit_keys{limiter}                                           keys held, per function given to WatchKeys
//
// # Labels
//
// domain, key1 and key2 are the labels the reference server's Prometheus
// mapping (its default statsd mapper) gives the same stat: the rule's key
// with ':' and '|' made '_' and the dots of an IPv4 address made '_', cut
// at its dots into the domain, the first level and the second (empty when
// the key has no second level; deeper levels have no label, as in the
// reference). A dashboard or alert written for the reference's Prometheus
// stats reads these series unchanged.
//
// Label values are UTF-8, as Prometheus requires: where a rule's key (of a
// descriptor value given as YAML's !!binary, say, which the reference
// accepts), a fallback's backend or reason, or a name given to WatchKeys
// holds bytes that are not UTF-8, each run of them reads U+FFFD (the
// Unicode replacement character), and rules whose keys then read the same
// count in one series, which a reload that removes some of them, keeping
// one, keeps counting from its total.
//
// The reference names a detailed_metric rule's stats, a value_to_metric
// level's and a request's own limit's by the descriptor values of each
// request, one series per value; here they stay the rule's key (for a
// request's own limit, the key of the rule it matched, or "DOMAIN.override"
// when none did), so that clients cannot add series.
//
// # Counting
//
// A hit is a request's hits_addend: a request of 5 hits counts 5, and each
// request is counted as the reference counts it, from what the rule had
// used before it (the capacity less Remaining) and the near-limit threshold
// floor(0.8·capacity), the reference's NEAR_LIMIT_RATIO computed as it does:
//
//   - total_hits: the hits.
//   - passed: within_limit the hits; near_limit the hits that took the
//     count past the threshold (all of them when it already was).
//   - over the limit: over_limit the hits past the limit (all of them when
//     it was already reached), and near_limit the hits between the threshold
//     and the limit that the request would have taken; shadow_mode the same
//     as over_limit, for a rule in shadow mode.
//
// The reference spends the hits of a request over the limit, so that the
// next requests of its window are over too; here a request over the limit
// takes nothing, and the next may pass. Where the decisions agree, so do the
// counters. With [WithAllOrNothing], which the reference does not have, a
// descriptor that passed counts within the limit even when another's denial
// gives its hits back.
//
// # Reloads
//
// A [Server] given Metrics with [WithObserver] tells it of each
// configuration it puts in force: the series of a rule the configuration
// no longer has (by key) leave /metrics, and those of a rule it keeps, even
// with another limit, keep counting, so a live series never goes down. A
// rule that comes back starts a new series from zero. Give a Metrics to one
// Server: each Server's configuration replaces the other's rules.
//
// Metrics is a [hotlimit.BackendObserver]: give it to [WithObserver] for the
// decisions, to the backend's limiters with hotlimit.WithObserver (in the
// options of redislimit.Factory) for its fallbacks, and register it with a
// Prometheus registry. The fallbacks carry the name and labels hotlimitprom
// gives them, and, as there, each reason's series is at 0 from the building
// of the first limiter on the backend (at the first configuration put in
// force, before any request, for the rules' limits; at its first request
// for a descriptor's own limit), so that increase(hotlimit_fallbacks_total[5m])
// sees the first fallback: call ObserveBackend(redislimit.Backend) at start,
// as hotlimitd does, for the series to be there whatever the limits. A nil *Metrics, given to either, observes nothing, as for a
// program that builds its Metrics only when metrics are on. The zero value
// is not usable; call [NewMetrics]: [New] and a registry refuse it with an
// error that says so, and it counts nothing. It is safe for concurrent use.
type Metrics struct {
	rules *xsync.MapOf[string, *ruleCounters]
	// requests, backendErrs and serviceErrs count ShouldRateLimit calls,
	// as the reference's total_requests and should_rate_limit errors.
	requests, backendErrs, serviceErrs atomic.Uint64
	// live holds the rule keys of the configuration in force, whose series
	// Collect exports, with the counts those series keep of rules removed;
	// nil (no Server told of one) exports every rule seen.
	live            atomic.Pointer[liveRules]
	loadOK, loadErr atomic.Uint64
	// fallbacks counts by backend and reason, both from small fixed sets.
	fallbacks *xsync.MapOf[fallbackKey, *atomic.Uint64]
	mu        sync.Mutex
	keys      map[string]func() int // WatchKeys's functions, by limiter name
}

// liveRules is what Collect exports: the series of the rule keys in keys,
// plus, by labels, the counts of removed rules whose series lives on in
// theirs (rules whose keys read the same, see labelValue), so that a
// removal does not take the series down. Replaced whole, never changed.
type liveRules struct {
	keys    map[string]bool
	retired map[[4]string][5]uint64
}

// fallbackKey is a fallback's labels.
type fallbackKey struct{ backend, reason string }

// ruleCounters are a rule's counters and labels.
type ruleCounters struct {
	total, over, near, within, shadow atomic.Uint64
	labels                            [4]string // key, domain, key1, key2
}

// newRuleCounters returns zero counters for the rule key, with the labels
// the reference's Prometheus mapping gives its stats.
func newRuleCounters(key string) *ruleCounters {
	return &ruleCounters{labels: labelsOf(key)}
}

// labelsOf returns the labels of the rule key's series: key, domain, key1
// and key2.
func labelsOf(key string) (labels [4]string) {
	labels[0] = labelValue(key)
	parts := strings.SplitN(sanitizeStatName(labels[0]), ".", 4)
	copy(labels[1:], parts)
	if len(parts) < 2 { // the reference's mapping names no domain for a key without a dot
		labels[1] = ""
	}
	return labels
}

// counts returns c's counters, in the order of Collect's descriptions.
func (c *ruleCounters) counts() (out [5]uint64) {
	for i, n := range []*atomic.Uint64{&c.total, &c.over, &c.near, &c.within, &c.shadow} {
		out[i] = n.Load()
	}
	return out
}

// labelValue returns s as a valid label value: each run of bytes of s that
// is not UTF-8 becomes U+FFFD. It returns s itself, unallocated, when s is
// UTF-8.
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// ipv4 matches what the reference's stat names take for an IPv4 address.
var ipv4 = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// sanitizeStatName is the reference's: ':' and '|' become '_', and so do
// the dots of anything that looks like an IPv4 address.
func sanitizeStatName(s string) string {
	s = strings.NewReplacer(":", "_", "|", "_").Replace(s)
	return ipv4.ReplaceAllStringFunc(s, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
}

// nearLimitRatio is the reference's default NEAR_LIMIT_RATIO, a float32 as
// there: 1 − [hotlimit.DefaultNearLimit].
const nearLimitRatio float32 = 0.8

// nearThreshold is the count past which the reference counts hits near the
// limit: floor(capacity·ratio), multiplied in float32 as the reference does.
func nearThreshold(capacity int64) int64 {
	return int64(math.Floor(float64(float32(capacity) * nearLimitRatio)))
}

// passedHits returns the near-limit hits of a request of n hits that
// passed, leaving the count at after out of capacity: those past the near
// threshold, all n when the count before it already was.
func passedHits(n, capacity, after int64) int64 {
	threshold, before := nearThreshold(capacity), after-n
	switch {
	case after <= threshold:
		return 0
	case before >= threshold:
		return n
	}
	return clampHits(after-threshold, n)
}

// deniedHits returns the over- and near-limit hits of a request of n hits
// over the limit, the count having been at before out of capacity: all n
// over when before had reached capacity, else the hits past capacity over
// and those from the near threshold (or before) up to capacity near.
func deniedHits(n, capacity, before int64) (over, near int64) {
	if before >= capacity {
		return n, 0
	}
	return clampHits(before+n-capacity, n), clampHits(capacity-max(nearThreshold(capacity), before), n)
}

// clampHits returns v within [0, n].
func clampHits(v, n int64) int64 { return min(max(v, 0), n) }

var (
	ruleLabels   = []string{"key", "domain", "key1", "key2"}
	descTotal    = prometheus.NewDesc("ratelimit_service_rate_limit_total_hits", "Hits asked for, by rule.", ruleLabels, nil)
	descOver     = prometheus.NewDesc("ratelimit_service_rate_limit_over_limit", "Hits over the limit, shadow mode included, by rule.", ruleLabels, nil)
	descNear     = prometheus.NewDesc("ratelimit_service_rate_limit_near_limit", "Hits past 80% of the limit (of the burst, for a rule with one), by rule.", ruleLabels, nil)
	descWithin   = prometheus.NewDesc("ratelimit_service_rate_limit_within_limit", "Hits that passed, by rule.", ruleLabels, nil)
	descShadow   = prometheus.NewDesc("ratelimit_service_rate_limit_shadow_mode", "Hits over a limit in shadow mode, answered OK, by rule.", ruleLabels, nil)
	descRequests = prometheus.NewDesc("ratelimit_service_total_requests", "ShouldRateLimit requests, over gRPC and /json.", []string{"grpc_method"}, nil)
	descCallErr  = prometheus.NewDesc("ratelimit_service_should_rate_limit_error",
		"ShouldRateLimit requests answered with an error: redis_error when the backend could not decide, service_error for the others.", []string{"err_type"}, nil)
	descLoadOK   = prometheus.NewDesc("ratelimit_service_config_load_success", "Configurations put in force.", nil, nil)
	descLoadErr  = prometheus.NewDesc("ratelimit_service_config_load_error", "Configurations rejected.", nil, nil)
	descFallback = prometheus.NewDesc("hotlimit_fallbacks_total",
		"Decisions a backend could not make, made by its failure policy, by backend and reason.", []string{"backend", "reason"}, nil)
	descKeys = prometheus.NewDesc("hotlimit_keys", "Keys held, by limiter.", []string{"limiter"}, nil)
)

// notMade is the description a zero-value Metrics sends, which a registry
// refuses: its help says why, and its empty name makes it invalid (made by
// prometheus.NewDesc, as hotlimitprom's, for a Registerer that wraps
// another rebuilds every description it is sent).
var notMade = prometheus.NewDesc("", "envoyrls: Metrics is a zero value: make it with envoyrls.NewMetrics", nil, nil)

// errNotMade is [Metrics.CheckObserver]'s error for a zero-value Metrics.
var errNotMade = errors.New("envoyrls: Metrics is a zero value, which counts nothing: make it with envoyrls.NewMetrics")

// CheckObserver returns an error saying to call [NewMetrics] for a
// zero-value Metrics, which counts nothing, and nil for one made by
// NewMetrics or a nil *Metrics (which counts nothing by choice).
// [hotlimit.CheckObserver] asks it, and so [New] refuses a zero value.
func (m *Metrics) CheckObserver() error {
	if m != nil && !m.made() {
		return errNotMade
	}
	return nil
}

// made reports whether m was made by [NewMetrics]: false for a nil or
// zero-value Metrics, which count and export nothing.
func (m *Metrics) made() bool { return m != nil && m.rules != nil }

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{rules: xsync.NewMapOf[string, *ruleCounters](), fallbacks: xsync.NewMapOf[fallbackKey, *atomic.Uint64]()}
}

// Observe counts e under e.Rule; see [hotlimit.Observer]. The count the
// rule had reached is read from e.Decision.Remaining against the capacity
// of e.Policy (e.Decision.Limit for an Event without a Source), as for an
// Event of one limit. A nil *Metrics observes nothing.
func (m *Metrics) Observe(e hotlimit.Event) {
	if !m.made() {
		return
	}
	rule := e.RuleName()
	c, ok := m.rules.Load(rule)
	if !ok {
		c, _ = m.rules.LoadOrCompute(rule, func() *ruleCounters { return newRuleCounters(rule) })
	}
	limit := e.Decision.Limit
	if e.Source != nil {
		limit = e.Policy.Capacity()
	}
	n, capacity := int64(max(e.N, 0)), int64(max(limit, 0))
	used := capacity - min(max(int64(e.Decision.Remaining), 0), capacity)
	c.total.Add(uint64(n))
	switch e.Outcome {
	case hotlimit.OutcomeDenied, hotlimit.OutcomeShadowDenied:
		over, near := deniedHits(n, capacity, used)
		c.over.Add(uint64(over))
		c.near.Add(uint64(near))
		if e.Outcome == hotlimit.OutcomeShadowDenied {
			c.shadow.Add(uint64(over))
		}
	case hotlimit.OutcomeAllowed, hotlimit.OutcomeNearLimit:
		c.within.Add(uint64(n))
		c.near.Add(uint64(passedHits(n, capacity, used)))
	}
}

// reload is called by a [Server] around putting cfg in force: the rules of
// cfg become the ones whose series Collect exports, and the counters of the
// others are forgotten. Before the new configuration serves (reload), the
// counters of its new rules are cleared, dropping what a decision of a
// former rule of the same key, still under way when it was removed, may
// have counted since, so that a rule that comes back starts from zero; the
// series of the outgoing and incoming rules are exported meanwhile. Once it
// serves (the function returned), only cfg's are. The key "DOMAIN.override"
// of each domain is cfg's, for the requests with their own limit that match
// no rule. A rule removed whose labels a rule of cfg has (their keys read
// the same) leaves its counts to that series, which so never goes down; a
// decision of it still under way once they are read counts nowhere, as for
// any rule removed.
func (m *Metrics) reload(cfg *Config) (served func()) {
	next := map[string]bool{}
	for _, r := range cfg.Rules() {
		next[r.Key] = true
	}
	for _, d := range cfg.Domains() {
		next[d.Name+".override"] = true
	}
	prev := m.live.Load()
	if prev != nil {
		both := make(map[string]bool, len(prev.keys)+len(next))
		for k := range prev.keys {
			both[k] = true
		}
		for k := range next {
			if !both[k] {
				m.rules.Delete(k)
			}
			both[k] = true
		}
		m.live.Store(&liveRules{keys: both, retired: prev.retired})
	}
	return func() {
		// The series that live on: those of next's labels. Reload calls
		// are serialised by the Server, so prev is still the live set's
		// retired counts, and the removed rules' counters are read before
		// the live set without them is stored, then dropped: no scrape
		// sees a series without them.
		labels := make(map[[4]string]bool, len(next))
		for k := range next {
			labels[labelsOf(k)] = true
		}
		retired := map[[4]string][5]uint64{}
		if prev != nil {
			for l, sum := range prev.retired {
				if labels[l] {
					retired[l] = sum
				}
			}
		}
		m.rules.Range(func(key string, c *ruleCounters) bool {
			if next[key] || !labels[c.labels] {
				return true
			}
			sum, add := retired[c.labels], c.counts()
			for i := range sum {
				sum[i] += add[i]
			}
			retired[c.labels] = sum
			return true
		})
		m.live.Store(&liveRules{keys: next, retired: retired})
		m.rules.Range(func(key string, _ *ruleCounters) bool {
			if !next[key] {
				m.rules.Delete(key)
			}
			return true
		})
	}
}

// request counts a ShouldRateLimit call that returned err.
func (m *Metrics) request(err error) {
	m.requests.Add(1)
	if err == nil {
		return
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		m.backendErrs.Add(1)
	default:
		m.serviceErrs.Add(1)
	}
}

// ObserveFallback counts f under its backend and reason; see
// [hotlimit.FallbackObserver]. A nil *Metrics observes nothing.
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	if !m.made() {
		return
	}
	k := fallbackKey{labelValue(f.Backend), labelValue(f.Reason)}
	c, ok := m.fallbacks.Load(k)
	if !ok {
		c = m.fallbackCounter(k)
	}
	c.Add(1)
}

// ObserveBackend exports the fallbacks of backend, one series per reason of
// [hotlimit.FallbackReasons], at 0 until they happen; see
// [hotlimit.BackendObserver]. A limiter on Redis calls it as it is built. A
// nil *Metrics observes nothing.
func (m *Metrics) ObserveBackend(backend string) {
	if !m.made() {
		return
	}
	backend = labelValue(backend)
	for _, r := range hotlimit.FallbackReasons() {
		m.fallbackCounter(fallbackKey{backend, r})
	}
}

// fallbackCounter returns the counter of k, creating it at 0 the first time.
func (m *Metrics) fallbackCounter(k fallbackKey) *atomic.Uint64 {
	c, _ := m.fallbacks.LoadOrCompute(k, func() *atomic.Uint64 { return new(atomic.Uint64) })
	return c
}

// ConfigLoaded counts a configuration put in force (ok) or rejected. A nil
// *Metrics counts nothing.
func (m *Metrics) ConfigLoaded(ok bool) {
	if !m.made() {
		return
	}
	if ok {
		m.loadOK.Add(1)
	} else {
		m.loadErr.Add(1)
	}
}

// Describe sends the metrics' descriptions; see [prometheus.Collector]. Of
// a zero-value Metrics it sends one invalid description, so that a
// registry refuses it with an error saying to call [NewMetrics].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	if m != nil && !m.made() {
		ch <- notMade
		return
	}
	for _, d := range []*prometheus.Desc{descTotal, descOver, descNear, descWithin, descShadow, descRequests, descCallErr, descLoadOK, descLoadErr, descFallback, descKeys} {
		ch <- d
	}
}

// Collect sends the counters' values; see [prometheus.Collector]. A nil
// *Metrics sends none.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	if !m.made() {
		return
	}
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(m.requests.Load()), "ShouldRateLimit")
	ch <- prometheus.MustNewConstMetric(descCallErr, prometheus.CounterValue, float64(m.backendErrs.Load()), "redis_error")
	ch <- prometheus.MustNewConstMetric(descCallErr, prometheus.CounterValue, float64(m.serviceErrs.Load()), "service_error")
	ch <- prometheus.MustNewConstMetric(descLoadOK, prometheus.CounterValue, float64(m.loadOK.Load()))
	ch <- prometheus.MustNewConstMetric(descLoadErr, prometheus.CounterValue, float64(m.loadErr.Load()))
	live := m.live.Load()
	// Rules whose keys differ only in bytes that are not UTF-8 have the
	// same labels (see labelValue), and a registry takes one series of a
	// name and labels: their counts are summed in it, with those of the
	// rules of those labels that reloads removed.
	series := map[[4]string]*[5]uint64{}
	if live != nil {
		for l, sum := range live.retired {
			series[l] = &sum
		}
	}
	m.rules.Range(func(key string, c *ruleCounters) bool {
		if live != nil && !live.keys[key] {
			return true
		}
		sum := series[c.labels]
		if sum == nil {
			sum = new([5]uint64)
			series[c.labels] = sum
		}
		for i, n := range c.counts() {
			sum[i] += n
		}
		return true
	})
	for labels, sum := range series {
		for i, d := range []*prometheus.Desc{descTotal, descOver, descNear, descWithin, descShadow} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(sum[i]), labels[:]...)
		}
	}
	m.fallbacks.Range(func(k fallbackKey, c *atomic.Uint64) bool {
		ch <- prometheus.MustNewConstMetric(descFallback, prometheus.CounterValue, float64(c.Load()), k.backend, k.reason)
		return true
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, keys := range m.keys {
		ch <- prometheus.MustNewConstMetric(descKeys, prometheus.GaugeValue, float64(keys()), name)
	}
}

// WatchKeys exports keys(), read at each scrape, as hotlimit_keys with the
// label limiter=name, as hotlimitprom does: pass [Server.Len]. A second call
// with the same name replaces the first (names are compared as their labels
// read, U+FFFD for bytes that are not UTF-8); a nil keys removes it. A nil
// *Metrics watches nothing.
func (m *Metrics) WatchKeys(name string, keys func() int) {
	if !m.made() {
		return
	}
	name = labelValue(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys == nil {
		delete(m.keys, name)
		return
	}
	if m.keys == nil {
		m.keys = map[string]func() int{}
	}
	m.keys[name] = keys
}

var (
	_ hotlimit.BackendObserver = (*Metrics)(nil)
	_ prometheus.Collector     = (*Metrics)(nil)
)
