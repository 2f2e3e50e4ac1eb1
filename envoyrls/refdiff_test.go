package envoyrls

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestReferenceDifferential sends one random sequence of ShouldRateLimit
// requests on testdata/refdiff to hotlimitd's server (fixed windows, its
// default, on Redis) and to the reference server (envoyproxy/ratelimit's
// src/service_cmd) on the same redis-server, and compares every answer
// field by field, then the per-rule counters of the reference's Prometheus
// stats with hotlimitd's /metrics series of the same domain, key1 and key2.
//
// It runs only with HOTLIMITD_REFERENCE set to the path of the reference's
// binary (built with `go build -o /tmp/refbin ./src/service_cmd` in a clone
// of github.com/envoyproxy/ratelimit), and needs redis-server:
//
//	HOTLIMITD_REFERENCE=/tmp/refbin go test -run TestReferenceDifferential -v .
//
// hotlimitd's server runs in the test's process, as ./cmd/hotlimitd serves
// it; with HOTLIMITD_REFERENCE_HOTLIMITD set to the path of hotlimitd's
// binary, that command instead, whose /metrics is then read over HTTP.
// HOTLIMITD_REFERENCE_SEED sets the sequence's seed (default: the time);
// HOTLIMITD_REFERENCE_TRACE, when set, logs every answer of both and their
// stats.
// The rules' windows are an hour and a day; a run that would cross the end
// of the hour waits for it first, so that both servers count in one window.
// The differences the README lists under "Moving from the reference" are
// allowed where they show (see refDiff.compare); any other fails the test.
func TestReferenceDifferential(t *testing.T) {
	bin := referenceBinary(t)
	redisAddr, _ := startRedis(t)
	inOneHour(t, 2*time.Minute) // both servers must count in the same hour

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HOTLIMITD_REFERENCE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "HOTLIMITD_REFERENCE_SEED")
		seed = v
	}
	t.Logf("seed %d (HOTLIMITD_REFERENCE_SEED)", seed)
	run := strconv.FormatUint(seed, 36) // fresh keys on a Redis shared by runs

	refAddr, promAddr := startReferenceOn(t, bin, redisAddr, "testdata/refdiff", run+"_")

	cfg, err := LoadDir("testdata/refdiff")
	require.NoError(t, err)
	var hotClient pb.RateLimitServiceClient
	var hotStats func() (map[statKey]ruleCounts, map[string]statKey)
	if hbin := os.Getenv("HOTLIMITD_REFERENCE_HOTLIMITD"); hbin != "" {
		grpcAddr, httpAddr := startHotlimitdOn(t, hbin, redisAddr, "testdata/refdiff", "hotlimitd:"+run+":")
		hotClient = dial(t, grpcAddr)
		hotStats = func() (map[statKey]ruleCounts, map[string]statKey) { return scrapeStats(t, httpAddr) }
	} else {
		client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		m := NewMetrics()
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(m))
		f := redislimit.Factory(client, redislimit.WithPrefix("hotlimitd:"+run+":"), redislimit.WithTimeout(10*time.Second))
		s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithObserver(m), WithLimiterOptions(hotlimit.WithFactory(f)))
		require.NoError(t, err)
		hotClient = serve(t, s)
		hotStats = func() (map[statKey]ruleCounts, map[string]statKey) { return hotlimitdStats(t, reg) }
	}

	d := &refDiff{hot: hotClient, ref: dial(t, refAddr), cfg: cfg, ownStats: map[statKey]string{}, diverged: map[string]string{}, ownDiverged: map[string]bool{}, limits: map[string]string{}, left: map[string]uint64{}, overcounted: map[string]bool{}}
	rng := rand.New(rand.NewPCG(seed, 0))
	const requests = 400
	for i := range requests {
		d.compare(t, i, refRequest(rng, d.spills))
	}
	t.Logf("%d requests, %d descriptors compared; documented differences: %d descriptors (%d counters diverged)",
		requests, d.statuses, d.documented, len(d.diverged))
	for k, why := range d.diverged {
		t.Logf("diverged: %s: %s", k, why)
	}

	// The reference flushes its stats every STATS_FLUSH_INTERVAL (set to
	// 100 ms below): read them once they stop moving.
	hot, byKey := hotStats()
	if os.Getenv("HOTLIMITD_REFERENCE_TRACE") != "" {
		t.Logf("hotlimitd stats: %+v", hot)
		t.Logf("reference stats: %+v", referenceStats(t, promAddr))
	}
	ref := foldOwnLimits(awaitReferenceStats(t, promAddr), d.ownStats, byKey)
	require.NotEmpty(t, ref, "the reference's /metrics has no per-rule stats")
	full := 0
	for k, rc := range ref {
		hc, found := hot[k]
		if !found {
			t.Errorf("stats of %v: the reference has %+v, hotlimitd none", k, rc)
			continue
		}
		if d.divergedRule(k) {
			// Past a documented divergence the counts follow different
			// decisions; the totals still agree.
			assert.Equal(t, rc.total, hc.total, "total_hits of %v", k)
			continue
		}
		assert.Equal(t, rc, hc, "stats of %v (total, within, near, over, shadow)", k)
		full++
	}
	t.Logf("stats of %d rules: %d compared in full, the others' total_hits", len(ref), full)
	assert.Positive(t, full, "no rule's stats compared in full")
	for k, hc := range hot {
		if _, found := ref[k]; !found && hc.total > 0 {
			t.Errorf("stats of %v: hotlimitd has %+v, the reference none", k, hc)
		}
	}
}

// refDiff compares the two servers' answers.
type refDiff struct {
	hot, ref pb.RateLimitServiceClient
	// diverged holds the counters (domain and descriptor) whose counts
	// differ by a documented difference, with the first request that made
	// them differ.
	diverged map[string]string
	// cfg is the rules; ownStats maps the reference's stats of a request's
	// own limit to the key of hotlimitd's series that counts them.
	cfg      *Config
	ownStats map[statKey]string
	// ownDiverged holds the domains where a counter of a request's own
	// limit diverged, whose stats count under DOMAIN.override or a rule's.
	ownDiverged map[string]bool
	// limits holds the limit each counter was last counted against.
	limits map[string]string
	// left holds what hotlimitd has left of each counter of a limit, and
	// overcounted the counters the reference has counted past the limit.
	left                 map[string]uint64
	overcounted          map[string]bool
	statuses, documented int
}

// counterKey names the counter a descriptor of domain counts in: its
// entries, as the reference's cache key is built.
func counterKey(domain string, d *rlext.RateLimitDescriptor) string {
	var b strings.Builder
	b.WriteString(domain)
	for _, e := range d.Entries {
		b.WriteString("|" + e.Key + "=" + e.Value)
	}
	return b.String()
}

// divergedRule reports whether a counter of the rule whose stats are k has
// diverged: one of the domain whose first entry's key begins key1 and whose
// second entry's key, when there is one, begins key2, as the reference
// names a rule's stats by its keys (and values).
func (d *refDiff) divergedRule(k statKey) bool {
	if k.key1 == "override" && d.ownDiverged[k.domain] {
		return true
	}
	for c := range d.diverged {
		parts := strings.Split(c, "|")
		if parts[0] != k.domain || len(parts) < 2 {
			continue
		}
		key := func(p string) string { return p[:strings.IndexByte(p, '=')] }
		if !strings.HasPrefix(k.key1, key(parts[1])) {
			continue
		}
		if k.key2 == "" || len(parts) > 2 && strings.HasPrefix(k.key2, key(parts[2])) {
			return true
		}
	}
	return false
}

// recordOwnLimit notes where each server counts the stats of desc, which
// has a limit of its own: the reference under its first two entries' keys
// and values (key1 per_hour_o), hotlimitd under the rule it matches, or
// DOMAIN.override when it matches none, as the README documents.
func (d *refDiff) recordOwnLimit(domain string, desc *rlext.RateLimitDescriptor) {
	k := statKey{domain: domain}
	var entries []Entry
	for i, e := range desc.Entries {
		entries = append(entries, Entry{e.Key, e.Value})
		switch i {
		case 0:
			k.key1 = e.Key + "_" + e.Value
		case 1:
			k.key2 = e.Key + "_" + e.Value
		}
	}
	hot := domain + ".override"
	if r, _ := d.cfg.Match(domain, entries); r != nil {
		hot = r.Key
	}
	d.ownStats[k] = hot
}

// limitOf names the limit desc is counted against: the rules' (empty), or
// its own.
func limitOf(desc *rlext.RateLimitDescriptor) string {
	if desc.Limit == nil {
		return ""
	}
	return desc.Limit.String()
}

// compare sends req to both servers and compares their answers field by
// field. A counter that a request of hits past what is left made OVER_LIMIT
// has diverged, as the README documents (the reference counts those hits,
// hotlimitd leaves what was left): from then on its code and remainder are
// not compared, nor the overall code of a request that holds it, only the
// limit that applies. So has one counted against two different limits (the
// rules' and a descriptor's own, or two of its own): the reference counts
// them in one counter, hotlimitd each limit in its own.
func (d *refDiff) compare(t *testing.T, i int, req *pb.RateLimitRequest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hr, herr := d.hot.ShouldRateLimit(ctx, req)
	rr, rerr := d.ref.ShouldRateLimit(ctx, req)
	require.NoError(t, rerr, "request %d to the reference: %v", i, req)
	require.NoError(t, herr, "request %d to hotlimitd: %v", i, req)
	require.Len(t, hr.Statuses, len(req.Descriptors))
	require.Len(t, rr.Statuses, len(req.Descriptors))
	what := func(j int) string {
		return fmt.Sprintf("request %d (%v, hits %d), descriptor %d", i, req.Domain, req.HitsAddend, j)
	}
	if os.Getenv("HOTLIMITD_REFERENCE_TRACE") != "" {
		t.Logf("req %d %s hits=%d", i, req.Domain, req.HitsAddend)
		for j, desc := range req.Descriptors {
			t.Logf("  %v | ref %v %d lim=%v | hot %v %d lim=%v", desc, rr.Statuses[j].Code, rr.Statuses[j].LimitRemaining, rr.Statuses[j].CurrentLimit, hr.Statuses[j].Code, hr.Statuses[j].LimitRemaining, hr.Statuses[j].CurrentLimit)
		}
	}
	overall := true
	for j, desc := range req.Descriptors {
		d.statuses++
		h, r := hr.Statuses[j], rr.Statuses[j]
		key := counterKey(req.Domain, desc)
		if prev, seen := d.limits[key]; seen && prev != limitOf(desc) {
			if _, gone := d.diverged[key]; !gone {
				d.diverged[key] = fmt.Sprintf("%s: limit %q after %q", what(j), limitOf(desc), prev)
				d.ownDiverged[req.Domain] = true
			}
		}
		d.limits[key] = limitOf(desc)
		if desc.Limit != nil {
			d.recordOwnLimit(req.Domain, desc)
		}
		if _, gone := d.diverged[key]; gone {
			overall = false
			d.documented++
			assert.Equal(t, r.CurrentLimit.String(), h.CurrentLimit.String(), "%s: current_limit %v", what(j), desc)
			continue
		}
		hits := uint64(max(req.HitsAddend, 1))
		if desc.HitsAddend != nil {
			hits = desc.HitsAddend.Value
		}
		// What hotlimitd had left before this request: its count is
		// exact, since it never counts hits over the limit.
		before, limited := d.left[key]
		if h.CurrentLimit != nil {
			limited = true
			if _, known := d.left[key]; !known {
				before = uint64(h.CurrentLimit.RequestsPerUnit)
			}
		}
		switch {
		case !limited:
		case hits > before && before > 0:
			// 3 hits against 2 left: the reference counts the 3, hotlimitd
			// leaves the 2, and the counts differ from now on. This answer
			// is still the same (over, or in shadow mode OK, nothing left).
			d.diverged[key] = fmt.Sprintf("%s: %d hits against %d left", what(j), hits, before)
			if desc.Limit != nil {
				d.ownDiverged[req.Domain] = true
			}
		case hits > before:
			// Over the limit with nothing left: the reference's count goes
			// past the limit, hotlimitd's stays at it, and only a later
			// hits_addend of 0 tells them apart.
			d.overcounted[key] = true
		default:
			d.left[key] = before - hits
		}
		if hits == 0 && d.overcounted[key] && r.Code == pb.RateLimitResponse_OVER_LIMIT && h.Code == pb.RateLimitResponse_OK {
			// The reference reads a count past the limit as over, hotlimitd
			// has exactly the limit taken.
			overall = false
			d.documented++
			assert.Equal(t, r.CurrentLimit.String(), h.CurrentLimit.String(), "%s: current_limit %v", what(j), desc)
			continue
		}
		assert.Equal(t, r.Code.String(), h.Code.String(), "%s: code %v", what(j), desc)
		assert.Equal(t, r.CurrentLimit.String(), h.CurrentLimit.String(), "%s: current_limit %v", what(j), desc)
		assert.Equal(t, r.LimitRemaining, h.LimitRemaining, "%s: limit_remaining %v", what(j), desc)
		rd, hd := r.DurationUntilReset.AsDuration(), h.DurationUntilReset.AsDuration()
		assert.InDelta(t, rd.Seconds(), hd.Seconds(), 2, "%s: duration_until_reset %v", what(j), desc)
	}
	if overall {
		assert.Equal(t, rr.OverallCode.String(), hr.OverallCode.String(), "request %d: overall_code", i)
	}
}

// refDescriptors are the shapes of descriptors the sequence draws from:
// each entry's value is drawn from its list, a few values per key so that
// counters fill up; keys the rules do not know are among them.
var refDescriptors = [][][2]any{
	{{"per_hour", []string{"a", "b"}}},
	{{"unlimited", []string{"x"}}},
	{{"replaced", []string{"r"}}},
	{{"replaced", []string{"r"}}, {"replacer", []string{"s"}}},
	{{"replacer", []string{"s"}}},
	{{"shadow", []string{"s"}}},
	{{"blocked", []string{"b"}}},
	{{"path", []string{"/api/x", "/api/y", "/other", "/api"}}},
	{{"tenant", []string{"t1", "t2"}}, {"user", []string{"u1", "admin"}}},
	{{"tenant", []string{"t1"}}, {"user", []string{"u1", "u2"}}, {"op", []string{"write", "read"}}},
	{{"tenant", []string{"t1"}}},
	{{"daily", []string{"d"}}},
	{{"unknown", []string{"u"}}},
	{{"per_hour", []string{"a"}}, {"extra", []string{"e"}}},
	{{"per_hour", []string{"o"}}},                          // always with its own limit of 4 an hour
	{{"own_limit", []string{"o"}}},                         // always with its own limit of 3 an hour
	{{"tenant", []string{"t9"}}, {"user", []string{"u1"}}}, // always with its own limit of 3 an hour
}

// refOverrides are the limits of their own that descriptors of these
// entries always carry: each counter has one limit, as a configuration
// that gives a descriptor its own limit does.
var refOverrides = map[string]uint32{"per_hour=o": 4, "own_limit=o": 3, "tenant=t9|user=u1": 3}

// refRequest draws a request: a domain, 1 to 3 descriptors, a request's
// hits_addend of 0, 1 or more, now and then a descriptor's own hits_addend
// or limit.
//
// A request of more hits than a counter has left, but some, makes the
// counts of the two servers differ from then on (README), so that the
// rest of the window compares less of that counter: spills tells such
// hits, and nine in ten of them are drawn again as 1.
func refRequest(rng *rand.Rand, spills func(domain string, desc *rlext.RateLimitDescriptor, hits uint64) bool) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: "diff"}
	if rng.IntN(5) == 0 {
		req.Domain = "other"
	}
	switch rng.IntN(4) {
	case 0:
		req.HitsAddend = 0
	case 1:
		req.HitsAddend = uint32(2 + rng.IntN(3))
	default:
		req.HitsAddend = 1
	}
	for range 1 + rng.IntN(3) {
		shape := refDescriptors[rng.IntN(len(refDescriptors))]
		desc := &rlext.RateLimitDescriptor{}
		for _, e := range shape {
			vals := e[1].([]string)
			desc.Entries = append(desc.Entries, &rlext.RateLimitDescriptor_Entry{Key: e[0].(string), Value: vals[rng.IntN(len(vals))]})
		}
		_, entries, _ := strings.Cut(counterKey("", desc), "|")
		if n, found := refOverrides[entries]; found {
			desc.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: n, Unit: 3 /* HOUR */}
		}
		switch r := rng.IntN(200); {
		case r < 20:
			desc.HitsAddend = wrapperspb.UInt64(uint64(rng.IntN(3)))
		case r == 20:
			if len(desc.Entries) > 2 {
				// The reference names the stats of this own limit as
				// those of its first two entries: which could not be
				// told from theirs.
				break
			}
			// Now and then a limit of its own on any descriptor: the
			// reference counts it with the descriptor's other limits.
			desc.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: uint32(3 + rng.IntN(5)), Unit: 3 /* HOUR */}
		}
		if desc.HitsAddend != nil && spills(req.Domain, desc, desc.HitsAddend.Value) && rng.IntN(10) > 0 {
			desc.HitsAddend.Value = 1
		}
		req.Descriptors = append(req.Descriptors, desc)
	}
	if req.HitsAddend > 1 && rng.IntN(10) > 0 {
		for _, desc := range req.Descriptors {
			if desc.HitsAddend == nil && spills(req.Domain, desc, uint64(req.HitsAddend)) {
				req.HitsAddend = 1
				break
			}
		}
	}
	return req
}

// spills reports whether hits on desc are more than hotlimitd has left of
// its counter, and it has some left (as far as the answers so far tell).
func (d *refDiff) spills(domain string, desc *rlext.RateLimitDescriptor, hits uint64) bool {
	left, known := d.left[counterKey(domain, desc)]
	if !known && desc.Limit != nil {
		left, known = uint64(desc.Limit.RequestsPerUnit), true
	}
	return known && left > 0 && hits > left
}

// referenceBinary returns the reference server's binary, which
// HOTLIMITD_REFERENCE names, and skips t without it.
func referenceBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HOTLIMITD_REFERENCE")
	if bin == "" {
		t.Skip("HOTLIMITD_REFERENCE (the reference server's binary) not set")
	}
	return bin
}

// inOneHour waits for the next hour when less than margin of this one is
// left, so that a test of rules counting by the hour, run within margin,
// counts every call in one window.
func inOneHour(t *testing.T, margin time.Duration) {
	t.Helper()
	if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < margin {
		t.Logf("waiting %v for the next hour", left)
		time.Sleep(left + time.Second)
	}
}

// startReferenceOn starts the reference server's binary bin on loopback
// with the YAML files of dir as its configuration, its state on the Redis at
// redisAddr under keys that begin with prefix, and its stats in Prometheus
// form, flushed every 100 ms, and env added to its environment, until t's
// cleanup. It returns its gRPC address, once it answers, and its Prometheus
// address.
func startReferenceOn(t *testing.T, bin, redisAddr, dir, prefix string, env ...string) (string, string) {
	ref := launchReference(t, bin, redisAddr, dir, prefix, true, env...)
	addr, log := ref.grpc, ref.log
	stub := dial(t, addr)
	// A descriptor no rule knows, so that waiting counts nothing.
	req := &pb.RateLimitRequest{Domain: "diff", Descriptors: []*rlext.RateLimitDescriptor{desc("unlimited", "ready")}}
	ok := assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := stub.ShouldRateLimit(ctx, req)
		return err == nil && len(resp.Statuses) == 1 && resp.Statuses[0].Code == pb.RateLimitResponse_OK
	}, 20*time.Second, 50*time.Millisecond)
	require.True(t, ok, "the reference server %s did not answer:\n%s", bin, log.String())
	return addr, ref.prom
}

// startHotlimitdOn starts hotlimitd's binary bin (built from
// ./cmd/hotlimitd) on loopback with the rules of dir, its defaults
// otherwise, and its state on the Redis at redisAddr under keys that begin
// with prefix, until t's cleanup. It returns its gRPC and HTTP addresses
// once it answers.
func startHotlimitdOn(t *testing.T, bin, redisAddr, dir, prefix string) (string, string) {
	p := startHotlimitdProc(t, bin, true, "-config", dir, "-redis", redisAddr, "-redis-prefix", prefix, "-redis-timeout", "10s")
	stub := dial(t, p.grpc)
	req := &pb.RateLimitRequest{Domain: "diff", Descriptors: []*rlext.RateLimitDescriptor{desc("unlimited", "ready")}}
	ok := assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := stub.ShouldRateLimit(ctx, req)
		return err == nil && len(resp.Statuses) == 1 && resp.Statuses[0].Code == pb.RateLimitResponse_OK
	}, 20*time.Second, 50*time.Millisecond)
	require.True(t, ok, "hotlimitd %s did not answer:\n%s", bin, p.log.String())
	return p.grpc, p.http
}

// statKey names a rule's stats as the reference's Prometheus mapping
// labels them.
type statKey struct{ domain, key1, key2 string }

// ruleCounts are a rule's five counters.
type ruleCounts struct{ total, within, near, over, shadow uint64 }

// addStat adds v to the counter stat of c.
func (c *ruleCounts) addStat(stat string, v uint64) {
	switch stat {
	case "total_hits":
		c.total += v
	case "within_limit":
		c.within += v
	case "near_limit":
		c.near += v
	case "over_limit":
		c.over += v
	case "shadow_mode":
		c.shadow += v
	}
}

// foldOwnLimits adds the reference's stats of requests' own limits, which
// it names by the descriptor's keys and values (domain diff, key1
// per_hour_o), to the series hotlimitd counts them in (own maps the first to
// the key of the second, whose labels byKey gives).
func foldOwnLimits(ref map[statKey]ruleCounts, own map[statKey]string, byKey map[string]statKey) map[statKey]ruleCounts {
	out := map[statKey]ruleCounts{}
	for k, c := range ref {
		if hot, found := own[k]; found {
			if hk, found := byKey[hot]; found {
				k = hk
			}
		}
		o := out[k]
		o.total += c.total
		o.within += c.within
		o.near += c.near
		o.over += c.over
		o.shadow += c.shadow
		out[k] = o
	}
	return out
}

// awaitReferenceStats reads the reference's per-rule counters from its
// Prometheus endpoint at addr once two reads a flush apart agree.
func awaitReferenceStats(t *testing.T, addr string) map[statKey]ruleCounts {
	t.Helper()
	var last map[statKey]ruleCounts
	for range 50 {
		time.Sleep(300 * time.Millisecond)
		cur := referenceStats(t, addr)
		if last != nil && fmt.Sprint(cur) == fmt.Sprint(last) {
			return cur
		}
		last = cur
	}
	return last
}

// referenceStats parses the reference's /metrics text: the series
// ratelimit_service_rate_limit_<stat>{domain, key1[, key2]}, whose value is
// a counter (or, from the default mapping's histograms, a _sum is not one:
// only counters are read).
func referenceStats(t *testing.T, addr string) map[statKey]ruleCounts {
	t.Helper()
	out, _ := scrapeStats(t, addr)
	return out
}

// scrapeStats reads the per-rule counters of the /metrics text at addr by
// the labels domain, key1 and key2, and the labels of each value of the
// label key (hotlimitd's rule key; the reference has none).
func scrapeStats(t *testing.T, addr string) (map[statKey]ruleCounts, map[string]statKey) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	out, byKey := map[statKey]ruleCounts{}, map[string]statKey{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, found := strings.CutPrefix(line, "ratelimit_service_rate_limit_")
		if !found {
			continue
		}
		name, rest, found := strings.Cut(rest, "{")
		require.True(t, found, "a per-rule stat without the labels domain, key1: %s", line)
		require.Contains(t, []string{"total_hits", "within_limit", "near_limit", "over_limit", "shadow_mode"}, name, line)
		labels, value, _ := strings.Cut(rest, "} ")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		require.NoError(t, err, line)
		var k statKey
		rule := ""
		for _, l := range strings.Split(labels, ",") {
			n, val, _ := strings.Cut(l, "=")
			val = strings.Trim(val, `"`)
			switch n {
			case "domain":
				k.domain = val
			case "key1":
				k.key1 = val
			case "key2":
				k.key2 = val
			case "key":
				rule = val
			}
		}
		if rule != "" {
			byKey[rule] = k
		}
		c := out[k]
		c.addStat(name, uint64(v))
		out[k] = c
	}
	require.NoError(t, sc.Err())
	return out, byKey
}

// hotlimitdStats gathers hotlimitd's per-rule counters from reg by the
// labels domain, key1 and key2 that the README documents, and the labels of
// each rule's key.
func hotlimitdStats(t *testing.T, reg *prometheus.Registry) (map[statKey]ruleCounts, map[string]statKey) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out, byKey := map[statKey]ruleCounts{}, map[string]statKey{}
	for _, mf := range mfs {
		stat, found := strings.CutPrefix(mf.GetName(), "ratelimit_service_rate_limit_")
		if !found {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var k statKey
			var rule string
			for _, p := range mt.GetLabel() {
				switch p.GetName() {
				case "domain":
					k.domain = p.GetValue()
				case "key1":
					k.key1 = p.GetValue()
				case "key2":
					k.key2 = p.GetValue()
				case "key":
					rule = p.GetValue()
				}
			}
			byKey[rule] = k
			c := out[k]
			c.addStat(stat, uint64(mt.GetCounter().GetValue()))
			out[k] = c
		}
	}
	return out, byKey
}
