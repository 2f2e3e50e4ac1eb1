package envoyrls

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestReplacedUnlimitedStaysUnlimited: a rule that replaces an unlimited
// rule's name leaves that descriptor unlimited (OK, limit_remaining
// MaxUint32), as the reference answers; an unlimited rule's replaces still
// remove the rules it names.
func TestReplacedUnlimitedStaysUnlimited(t *testing.T) {
	d, err := ParseDomain("unl.yaml", []byte(`
domain: unl
descriptors:
  - key: free
    rate_limit: {unlimited: true, name: free}
  - key: limited
    rate_limit: {unit: minute, requests_per_unit: 5, name: limited, replaces: [{name: free}]}
  - key: lifts
    rate_limit: {unlimited: true, replaces: [{name: limited}]}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	ask := func(pairs ...string) *pb.RateLimitResponse {
		t.Helper()
		req := &pb.RateLimitRequest{Domain: "unl"}
		for i := 0; i+1 < len(pairs); i += 2 {
			req.Descriptors = append(req.Descriptors, &rlext.RateLimitDescriptor{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: pairs[i], Value: pairs[i+1]}}})
		}
		resp, err := s.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, resp.Statuses, len(req.Descriptors))
		return resp
	}

	resp := ask("free", "a", "limited", "b")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.Statuses[0].Code)
	assert.Nil(t, resp.Statuses[0].CurrentLimit)
	assert.Equal(t, uint32(math.MaxUint32), resp.Statuses[0].LimitRemaining, "replaced, still unlimited")
	require.NotNil(t, resp.Statuses[1].CurrentLimit)
	assert.Equal(t, uint32(4), resp.Statuses[1].LimitRemaining, "the replacing rule counts")

	resp = ask("limited", "b", "lifts", "c")
	assert.Nil(t, resp.Statuses[0].CurrentLimit, "replaced by the unlimited rule")
	assert.Equal(t, uint32(0), resp.Statuses[0].LimitRemaining)
	assert.Equal(t, uint32(math.MaxUint32), resp.Statuses[1].LimitRemaining)
}

// TestHeadersQuotaOverIsMostConstrained: a quota-mode descriptor over its
// limit is over the limit, so its headers are the ones sent even when the
// request passes (another quota descriptor has room), as the reference
// picks them.
func TestHeadersQuotaOverIsMostConstrained(t *testing.T) {
	s := referenceHeadersServer(t, "quota.yaml", `
domain: quota
descriptors:
  - key: q1
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: n
    rate_limit: {unit: minute, requests_per_unit: 100}
`)
	ask := func() (*pb.RateLimitResponse, map[string]string) {
		t.Helper()
		return askKeys(t, s, "quota", false, "q1", "q2", "n")
	}
	resp, got := ask()
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	assert.Equal(t, map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "59"}, got, "q1 has nothing left")

	resp, got = ask()
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.Statuses[0].Code)
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "q2 still has room")
	assert.Equal(t, map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "59"}, got, "q1, over its limit, not n or q2")
}

// TestHeadersNameTheLastDenial: of the descriptors over their limits, the
// headers are those of the last that denies the request, as the reference
// picks it; one over its limit in shadow mode or in quota mode, which
// denies nothing by itself, is not picked over a denial before it.
func TestHeadersNameTheLastDenial(t *testing.T) {
	s := referenceHeadersServer(t, "deny.yaml", `
domain: deny
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: s
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`)
	for i, tc := range []struct {
		keys  []string
		limit string
	}{
		{[]string{"a", "b"}, "2"}, // both deny: the last
		{[]string{"b", "a"}, "3"},
		{[]string{"a", "s"}, "3"}, // s over in shadow mode denies nothing
		{[]string{"s", "a"}, "3"},
		{[]string{"a", "q"}, "3"}, // so does q over in quota mode
	} {
		req := &pb.RateLimitRequest{Domain: "deny", HitsAddend: 5} // over every limit at once
		for _, k := range tc.keys {
			req.Descriptors = append(req.Descriptors, &rlext.RateLimitDescriptor{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: k, Value: strings.Repeat("v", i+1)}}})
		}
		resp, err := s.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "case %d", i)
		got := map[string]string{}
		for _, hv := range resp.ResponseHeadersToAdd {
			got[hv.Key] = hv.Value
		}
		assert.Equal(t, map[string]string{"RateLimit-Limit": tc.limit, "RateLimit-Remaining": "0", "RateLimit-Reset": "59"}, got, "case %d: %v", i, tc.keys)
	}
}

// TestNilDescriptorIsInvalidArgument: a request built in Go with a nil
// descriptor in its list (gRPC never decodes one, a caller of
// ShouldRateLimit may pass one) is refused as InvalidArgument naming it,
// for a known domain or not, and never panics.
func TestNilDescriptorIsInvalidArgument(t *testing.T) {
	cfg, err := LoadDir("testdata/conformance")
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	for _, domain := range []string{"conf", "unknown"} {
		req := &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlext.RateLimitDescriptor{
			{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "per_hour", Value: "x"}}}, nil,
		}}
		var resp *pb.RateLimitResponse
		require.NotPanics(t, func() { resp, err = s.ShouldRateLimit(context.Background(), req) }, "domain %s", domain)
		assert.Nil(t, resp)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "domain %s: %v", domain, err)
		assert.ErrorContains(t, err, "descriptors[1] must not be null", "domain %s", domain)
	}
}

// TestNilRequestPartsAreInvalidArgument: a nil request, and a nil entry in
// a descriptor, built in Go (gRPC decodes neither), are refused as
// InvalidArgument, for a known domain or not, and never panic; over /json,
// a null descriptor or entry is invalid JSON to protojson (400), and a null
// limit or hits_addend is one not given.
func TestNilRequestPartsAreInvalidArgument(t *testing.T) {
	cfg, err := LoadDir("testdata/conformance")
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	reqs := map[string]*pb.RateLimitRequest{"nil request": nil}
	for _, domain := range []string{"conf", "unknown"} {
		reqs["nil entry, domain "+domain] = &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlext.RateLimitDescriptor{
			{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "per_hour", Value: "x"}, nil}},
		}}
	}
	for name, req := range reqs {
		var resp *pb.RateLimitResponse
		require.NotPanics(t, func() { resp, err = s.ShouldRateLimit(context.Background(), req) }, name)
		assert.Nil(t, resp, name)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
	}

	for body, want := range map[string]int{
		`{"domain":"conf","descriptors":[null]}`:                                                                        http.StatusBadRequest,
		`{"domain":"conf","descriptors":[{"entries":[null]}]}`:                                                          http.StatusBadRequest,
		`{"domain":"conf","descriptors":[{"entries":[{"key":"per_hour","value":"j"}],"limit":null,"hitsAddend":null}]}`: http.StatusOK,
	} {
		w := httptest.NewRecorder()
		require.NotPanics(t, func() {
			s.JSONHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/json", strings.NewReader(body)))
		}, body)
		assert.Equal(t, want, w.Code, "%s: %s", body, w.Body.String())
	}
}

// TestBlockingRuleKeepsItsWindow: a rule of requests_per_unit 0 with a
// window that is not a whole number of seconds denies every hit and
// reports the time until its window ends, as a blocking rule of a unit
// does, and names that window in RateLimit-Policy, where it reported a
// reset of 0 and a window of 0 s.
func TestBlockingRuleKeepsItsWindow(t *testing.T) {
	d, err := ParseDomain("block.yaml", []byte(`
domain: block
descriptors:
  - key: k
    rate_limit: {window: 1500ms, requests_per_unit: 0}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(int64(time.Hour + 400*time.Millisecond)) // 3600.4 s: 0.4 s into a 1.5 s window
	s, err := New(cfg, WithClock(now.Load), WithHeaders(HeadersDraft), WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "block",
		Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "k", Value: "a"}}}}})
	require.NoError(t, err)
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode)
	assert.Equal(t, 1100*time.Millisecond, resp.Statuses[0].DurationUntilReset.AsDuration(), "until 3601.5 s")
	got := map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	assert.Contains(t, got["RateLimit-Policy"], ";w=2", "1.5 s, rounded up to whole seconds")
}

// TestBlockingOverrideKeepsItsWindow: a descriptor's own limit of
// requests_per_unit 0 on a descriptor whose rule is not a FixedWindow
// denies every hit and reports the time until the override's window ends,
// as a blocking rule does and the reference reports it, where it reported a
// duration_until_reset of 0, telling the client to retry at once.
func TestBlockingOverrideKeepsItsWindow(t *testing.T) {
	d, err := ParseDomain("block.yaml", []byte(`
domain: block
descriptors:
  - key: tb
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: TokenBucket}
  - key: sl
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: SlidingLog}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(int64(time.Hour + 10*time.Second)) // 10 s into a minute
	s, err := New(cfg, WithClock(now.Load), WithHeaders(HeadersReference), WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	for _, key := range []string{"tb", "sl"} {
		resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "block",
			Descriptors: []*rlext.RateLimitDescriptor{{
				Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: "a"}},
				Limit:   &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 0, Unit: typev3.RateLimitUnit_MINUTE},
			}}})
		require.NoError(t, err, key)
		require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, key)
		assert.Equal(t, 50*time.Second, resp.Statuses[0].DurationUntilReset.AsDuration(), "%s: until the minute ends", key)
		got := map[string]string{}
		for _, hv := range resp.ResponseHeadersToAdd {
			got[hv.Key] = hv.Value
		}
		assert.Equal(t, "50", got["RateLimit-Reset"], key)
	}
}

// overrideServer returns a server of one domain, "o", whose rule for the
// key "k" the requests override, built with opts.
func overrideServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	d, err := ParseDomain("o.yaml", []byte(`
domain: o
descriptors:
  - key: k
    rate_limit: {unit: hour, requests_per_unit: 100}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	s, err := New(cfg, append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(t, err)
	return s
}

// askOverride sends one hit on the descriptor k=v with its own limit of
// rpu requests an hour.
func askOverride(s *Server, v string, rpu uint32) (*pb.RateLimitResponse, error) {
	d := &rlext.RateLimitDescriptor{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "k", Value: v}},
		Limit:   &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: typev3.RateLimitUnit_HOUR},
	}
	return s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "o", Descriptors: []*rlext.RateLimitDescriptor{d}})
}

// TestOverridesBoundedByKeyCapTables: with a key cap of 2^20, each
// override's limiter has a table sized for 2^20 keys (32 MB once a flood
// fills it), so only 4 distinct overrides are kept (128 MB in all): the 5th is
// ResourceExhausted, as past maxOverrides, and the first 4 still decide.
func TestOverridesBoundedByKeyCapTables(t *testing.T) {
	s := overrideServer(t, WithLimiterOptions(hotlimit.WithMaxKeys(1<<20)))
	for rpu := uint32(1); rpu <= 4; rpu++ {
		resp, err := askOverride(s, "a", rpu)
		require.NoError(t, err, "override %d", rpu)
		assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "override %d", rpu)
	}
	_, err := askOverride(s, "a", 5)
	require.Error(t, err)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.ErrorContains(t, err, "more than 4 distinct limit overrides")
	assert.Len(t, *s.over.Load(), 4, "the refused override built no limiter")
	for rpu := uint32(1); rpu <= 4; rpu++ {
		// Each override's second hit: over the limit of 1, within the others.
		resp, err := askOverride(s, "a", rpu)
		require.NoError(t, err, "override %d", rpu)
		want := pb.RateLimitResponse_OK
		if rpu == 1 {
			want = pb.RateLimitResponse_OVER_LIMIT
		}
		assert.Equal(t, want, resp.OverallCode, "override %d", rpu)
		assert.Equal(t, uint32(max(int(rpu)-2, 0)), resp.Statuses[0].LimitRemaining, "override %d", rpu)
	}
}

// TestOverridesBoundedByCountWithoutKeyCap: without a key cap, the
// overrides' limiters start small, and maxOverrides of them are kept: the
// next one is ResourceExhausted.
func TestOverridesBoundedByCountWithoutKeyCap(t *testing.T) {
	s := overrideServer(t)
	for rpu := uint32(1); rpu <= maxOverrides; rpu++ {
		_, err := askOverride(s, "a", rpu)
		require.NoError(t, err, "override %d", rpu)
	}
	_, err := askOverride(s, "a", maxOverrides+1)
	require.Error(t, err)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.ErrorContains(t, err, "more than 4096 distinct limit overrides")
}

// TestOverrideBound: the bound on distinct overrides for a key cap, as
// overrideTables documents it: the overrides' tables, flooded, headers
// included, take no more than 4 tables of 2^20 keys, about 128 MB.
func TestOverrideBound(t *testing.T) {
	small, hundredK := 894, 28 // with a 64-bit platform's allocations
	if strconv.IntSize == 32 {
		small = 837 // an array of 32 slots takes an allocation header
	}
	for _, c := range []struct{ maxKeys, want int }{
		{0, 4096}, {1, small}, {1024, small}, {100_000, hundredK},
		{1_000_000, 4}, {1 << 20, 4}, {1<<20 + 1, 4}, {math.MaxInt, 4},
	} {
		assert.Equal(t, c.want, overrideBound(c.maxKeys), "max keys %d", c.maxKeys)
		if c.maxKeys > 0 {
			assert.LessOrEqual(t, c.want*keyed.TableBytes(c.maxKeys), 4*keyed.TableBytes(keyed.MaxPresize), "max keys %d", c.maxKeys)
		}
	}
}

// referenceHeadersServer serves the domain of the YAML text under name, with
// the reference's headers, on a clock frozen 1 s into a minute.
func referenceHeadersServer(t *testing.T, name, text string) *Server {
	t.Helper()
	d, err := ParseDomain(name, []byte(text))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(int64(time.Hour + time.Second)) // 1 s into a minute
	s, err := New(cfg, WithClock(now.Load), WithHeaders(HeadersReference), WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	return s
}

// overdrawn is a factory's limiter that reports a negative Remaining, as a
// Limiter of the caller's own may: the hotlimit.Decision contract does not
// rule it out.
type overdrawn struct{ hotlimit.Limiter }

func (overdrawn) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: true, Limit: 5, Remaining: -3}
}

// TestNegativeRemainingReadsAsNone: a factory's limiter that reports a
// negative Remaining gives limit_remaining 0 and RateLimit-Remaining 0, not
// the count wrapped into a uint32 (4294967293 for -3, next to an unlimited
// rule's 4294967295), which would tell the client it has all but unlimited
// requests left. The limiters of this module never report one; the server
// cannot know that a factory's do not.
func TestNegativeRemainingReadsAsNone(t *testing.T) {
	cfg := configOf(t, "web.yaml", "domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n")
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		return overdrawn{lim}, err
	}
	s, err := New(cfg, WithHeaders(HeadersReference), WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)
	resp, got := askKeys(t, s, "web", false, "ip")
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	assert.Zero(t, resp.Statuses[0].LimitRemaining)
	assert.Equal(t, "0", got["RateLimit-Remaining"])
}
