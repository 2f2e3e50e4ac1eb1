package envoyrls

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// matchGen writes random configurations: descriptor trees of a few keys
// and values (wildcards among them) up to four levels deep, whose rules
// each have a limit of their own, so that the limit an answer reports
// names the rule that matched, some unlimited, some named and replacing
// others, some wildcards sharing one counter (share_threshold); and requests, most of them along the trees' paths.
type matchGen struct {
	rng *rand.Rand
	// small makes limits of 1 to 4, reached within a run, and rules in
	// shadow and quota mode.
	small bool
	rules int
	b     strings.Builder
	trees map[string][]*matchNode // by domain
}

// matchNode is a descriptor of a generated configuration.
type matchNode struct {
	key, value string
	children   []*matchNode
}

var (
	// "a*": a key that is a wildcard; "a*y": one whose '*' is inside, which
	// an entry of key "a*y" also selects as a bare key when its key_value
	// does not end in y.
	matchKeys      = []string{"a", "b", "c", "a*", "a*y"}
	requestKeys    = []string{"a", "b", "c", "ab", "z", "a*y"}
	matchValues    = []string{"", "", "x", "y", "xy", "x*", "*", "*y", "x*y", "*x*"}
	requestValues  = []string{"", "x", "y", "xy", "yx", "xay", "xyx", "z", "x*"}
	matchUnits     = []string{"day", "week", "month", "year", "DAY", "Year"}
	matchNameCount = 6
)

// domain writes the file of domain name.
func (g *matchGen) domain(name string) string {
	g.b.Reset()
	fmt.Fprintf(&g.b, "domain: %s\ndescriptors:\n", name)
	if g.trees == nil {
		g.trees = map[string][]*matchNode{}
	}
	g.trees[name] = g.level(0)
	return g.b.String()
}

// level writes a list of descriptors at depth (0 the domain's).
func (g *matchGen) level(depth int) []*matchNode {
	indent := strings.Repeat("    ", depth)
	seen := map[string]bool{}
	var nodes []*matchNode
	for range 1 + g.rng.IntN(4) {
		key, value := matchKeys[g.rng.IntN(len(matchKeys))], matchValues[g.rng.IntN(len(matchValues))]
		if seen[key+"_"+value] {
			continue
		}
		seen[key+"_"+value] = true
		n := &matchNode{key: key, value: value}
		nodes = append(nodes, n)
		fmt.Fprintf(&g.b, "%s  - key: %q\n", indent, key)
		if value != "" {
			fmt.Fprintf(&g.b, "%s    value: %q\n", indent, value)
		}
		if g.rng.IntN(4) == 0 {
			fmt.Fprintf(&g.b, "%s    detailed_metric: true\n", indent)
		}
		if g.rng.IntN(4) == 0 {
			fmt.Fprintf(&g.b, "%s    value_to_metric: true\n", indent)
		}
		if strings.Contains(key+value, "*") && g.rng.IntN(3) == 0 {
			fmt.Fprintf(&g.b, "%s    share_threshold: true\n", indent)
		}
		if g.small && g.rng.IntN(4) == 0 {
			fmt.Fprintf(&g.b, "%s    shadow_mode: true\n", indent)
		}
		if g.small && g.rng.IntN(3) == 0 {
			fmt.Fprintf(&g.b, "%s    quota_mode: true\n", indent)
		}
		if g.rng.IntN(3) > 0 {
			g.rule(indent + "    ")
		}
		if depth < 3 && g.rng.IntN(2) == 0 {
			fmt.Fprintf(&g.b, "%s    descriptors:\n", indent)
			n.children = g.level(depth + 1)
		}
	}
	return nodes
}

// rule writes a rate_limit.
func (g *matchGen) rule(indent string) {
	g.rules++
	fmt.Fprintf(&g.b, "%srate_limit:\n", indent)
	name := ""
	if g.rng.IntN(2) == 0 {
		name = "n" + strconv.Itoa(g.rng.IntN(matchNameCount))
		fmt.Fprintf(&g.b, "%s  name: %s\n", indent, name)
	}
	if g.rng.IntN(10) == 0 {
		fmt.Fprintf(&g.b, "%s  unlimited: true\n", indent)
	} else {
		// A limit of its own names the rule in answers; far from reached
		// unless small.
		limit := 100000 + g.rules
		if g.small {
			limit = 1 + g.rng.IntN(4)
		}
		fmt.Fprintf(&g.b, "%s  requests_per_unit: %d\n", indent, limit)
		fmt.Fprintf(&g.b, "%s  unit: %s\n", indent, matchUnits[g.rng.IntN(len(matchUnits))])
	}
	if g.rng.IntN(3) == 0 {
		fmt.Fprintf(&g.b, "%s  replaces:\n", indent)
		for range 1 + g.rng.IntN(2) {
			if r := "n" + strconv.Itoa(g.rng.IntN(matchNameCount)); r != name {
				fmt.Fprintf(&g.b, "%s    - name: %s\n", indent, r)
			}
		}
	}
}

// request returns a random request to one of domains descriptors.
func (g *matchGen) request(domains int) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: "m" + strconv.Itoa(g.rng.IntN(domains))}
	if !g.small {
		// Hits past a small limit count differently (README: Moving from
		// the reference); under a large one they count alike.
		req.HitsAddend = []uint32{0, 1, 2, 5}[g.rng.IntN(4)]
	}
	for range 1 + g.rng.IntN(4) {
		d := &rlext.RateLimitDescriptor{}
		if g.rng.IntN(4) > 0 {
			g.path(d, g.trees[req.Domain])
		}
		for len(d.Entries) == 0 || g.rng.IntN(6) == 0 {
			key := requestKeys[g.rng.IntN(len(requestKeys))]
			d.Entries = append(d.Entries, &rlext.RateLimitDescriptor_Entry{Key: key, Value: requestValues[g.rng.IntN(len(requestValues))]})
		}
		if !g.small && g.rng.IntN(3) == 0 {
			d.HitsAddend = wrapperspb.UInt64([]uint64{0, 1, 3}[g.rng.IntN(3)])
		}
		if last := d.Entries[len(d.Entries)-1]; last.Value == "yx" {
			// A descriptor's own limit, always the same for the same
			// entries (with and without, or two different ones, they count
			// differently: README, Moving from the reference).
			d.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 500000, Unit: typev3.RateLimitUnit_DAY}
			if g.small {
				d.Limit.RequestsPerUnit = 2
			}
		}
		req.Descriptors = append(req.Descriptors, d)
	}
	return req
}

// path adds to d the entries of a random path down nodes: each a value
// the node's takes (a wildcard's stars filled in), or any other.
func (g *matchGen) path(d *rlext.RateLimitDescriptor, nodes []*matchNode) {
	for len(nodes) > 0 {
		n := nodes[g.rng.IntN(len(nodes))]
		value := n.value
		switch {
		case g.rng.IntN(5) == 0 || value == "":
			value = requestValues[g.rng.IntN(len(requestValues))]
		case strings.Contains(value, "*"):
			fills := []string{"", "q", "xy", "*"}
			parts := strings.Split(value, "*")
			value = parts[0]
			for _, p := range parts[1:] {
				value += fills[g.rng.IntN(len(fills))] + p
			}
		}
		d.Entries = append(d.Entries, &rlext.RateLimitDescriptor_Entry{Key: n.key, Value: value})
		if g.rng.IntN(4) == 0 {
			return
		}
		nodes = n.children
	}
}

// TestReferenceMatching writes random configurations (matchGen), loads
// them in the reference server (on Redis) and in hotlimitd's, and sends
// both the same random requests: every answer must report the same code,
// the same limit (which names the rule that matched, or none: no rule,
// unlimited, or replaced), the same limit_remaining and duration_until_reset
// (within the second the servers' clocks may read apart), descriptor by
// descriptor, and the same response headers (the reference's, as
// LIMIT_RESPONSE_HEADERS_ENABLED and -headers reference add them). With large limits, never reached, it compares matching;
// with small ones, in shadow and quota mode too, the answers over the
// limit. Under large limits, requests carry hits_addend 0 to 5 and some
// descriptors their own hits_addend (0 only checks); under both, those
// whose last value is "yx" have their own limit. Like TestReferenceDifferential, it runs only with
// HOTLIMITD_REFERENCE set to the reference's binary, and needs
// redis-server; HOTLIMITD_REFERENCE_SEED replays a run.
//
//	HOTLIMITD_REFERENCE=/tmp/refbin go test -run TestReferenceMatching -v .
func TestReferenceMatching(t *testing.T) {
	bin := referenceBinary(t)
	redisAddr, _ := startRedis(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HOTLIMITD_REFERENCE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "HOTLIMITD_REFERENCE_SEED")
		seed = v
	}
	t.Logf("seed %d (HOTLIMITD_REFERENCE_SEED)", seed)
	// Every window is whole days, aligned on 00:00 UTC: a run that would
	// cross it waits for it, so that both servers count in one window.
	if left := time.Until(time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)); left < 2*time.Minute {
		t.Logf("waiting %v for the next day", left)
		time.Sleep(left + time.Second)
	}
	t.Run("large limits", func(t *testing.T) { referenceMatching(t, bin, redisAddr, seed, false) })
	t.Run("small limits", func(t *testing.T) { referenceMatching(t, bin, redisAddr, seed, true) })
}

// referenceMatching runs TestReferenceMatching with small or large limits.
func referenceMatching(t *testing.T, bin, redisAddr string, seed uint64, small bool) {
	g := &matchGen{rng: rand.New(rand.NewPCG(seed, 1)), small: small}
	const domains, requests = 30, 1500
	dir := t.TempDir()
	files := map[string]string{}
	for i := range domains {
		name := "m" + strconv.Itoa(i)
		files[name] = g.domain(name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(files[name]), 0o644))
	}
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithHeaders(HeadersReference))
	require.NoError(t, err)
	hot := serve(t, s)
	refAddr, _ := startReferenceOn(t, bin, redisAddr, dir, fmt.Sprintf("%s_%v_", strconv.FormatUint(seed, 36), small),
		"LIMIT_RESPONSE_HEADERS_ENABLED=true")
	ref := dial(t, refAddr)

	limited, over, headed := 0, 0, 0
	for i := range requests {
		req := g.request(domains)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rr, rerr := ref.ShouldRateLimit(ctx, req)
		hr, herr := hot.ShouldRateLimit(ctx, req)
		cancel()
		require.NoError(t, rerr, "request %d to the reference", i)
		require.NoError(t, herr, "request %d to hotlimitd", i)
		require.Len(t, hr.Statuses, len(req.Descriptors))
		require.Len(t, rr.Statuses, len(req.Descriptors))
		failed := !assert.Equal(t, rr.OverallCode, hr.OverallCode, "request %d: overall_code", i)
		for j := range req.Descriptors {
			h, r := hr.Statuses[j], rr.Statuses[j]
			if r.CurrentLimit != nil {
				limited++
			}
			if r.Code == pb.RateLimitResponse_OVER_LIMIT {
				over++
			}
			failed = !assert.Equal(t, r.Code, h.Code, "request %d, descriptor %d: code", i, j) || failed
			failed = !assert.True(t, proto.Equal(r.CurrentLimit, h.CurrentLimit), "request %d, descriptor %d: current_limit: reference %v, hotlimitd %v", i, j, r.CurrentLimit, h.CurrentLimit) || failed
			failed = !assert.Equal(t, r.LimitRemaining, h.LimitRemaining, "request %d, descriptor %d: limit_remaining", i, j) || failed
			// Each server reads its own clock: a second apart at most.
			rd, hd := r.DurationUntilReset.AsDuration(), h.DurationUntilReset.AsDuration()
			failed = !assert.True(t, (r.DurationUntilReset == nil) == (h.DurationUntilReset == nil) && rd-hd <= time.Second && hd-rd <= time.Second,
				"request %d, descriptor %d: duration_until_reset: reference %v, hotlimitd %v", i, j, r.DurationUntilReset, h.DurationUntilReset) || failed
		}
		failed = !sameHeaders(t, i, rr.ResponseHeadersToAdd, hr.ResponseHeadersToAdd) || failed
		if len(rr.ResponseHeadersToAdd) > 0 {
			headed++
		}
		if failed {
			t.Fatalf("request %d: %v\nconfiguration of %s:\n%s", i, req, req.Domain, files[req.Domain])
		}
	}
	t.Logf("%d rules in %d domains, %d requests (%d with headers); %d descriptors matched a limit, %d over it", g.rules, domains, requests, headed, limited, over)
	assert.Positive(t, limited, "no descriptor matched a limit")
	assert.Positive(t, headed, "no answer with headers")
	if small {
		assert.Positive(t, over, "no descriptor over its limit")
	}
}

// sameHeaders reports whether the reference's response headers ref and
// hotlimitd's hot are the same, RateLimit-Reset within a second (each
// server reads its own clock), and fails t where they are not.
func sameHeaders(t *testing.T, i int, ref, hot []*core.HeaderValue) bool {
	t.Helper()
	if !assert.Len(t, hot, len(ref), "request %d: headers: reference %v, hotlimitd %v", i, ref, hot) {
		return false
	}
	ok := true
	for j := range ref {
		r, h := ref[j], hot[j]
		ok = assert.Equal(t, r.Key, h.Key, "request %d: header %d", i, j) && ok
		if r.Key == "RateLimit-Reset" {
			rv, err1 := strconv.Atoi(r.Value)
			hv, err2 := strconv.Atoi(h.Value)
			ok = assert.True(t, err1 == nil && err2 == nil && hv-rv <= 1 && rv-hv <= 1,
				"request %d: RateLimit-Reset: reference %s, hotlimitd %s", i, r.Value, h.Value) && ok
			continue
		}
		ok = assert.Equal(t, r.Value, h.Value, "request %d: %s", i, r.Key) && ok
	}
	return ok
}
