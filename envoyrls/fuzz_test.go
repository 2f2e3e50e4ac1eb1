package envoyrls

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// FuzzParseDomain: any file either loads or gives an error wrapping
// ErrConfig that names it; never a panic. A file that loads holds valid
// policies, and a server either puts it in force or says which rule its
// limiters cannot hold, naming the file.
func FuzzParseDomain(f *testing.F) {
	for _, dir := range []string{"testdata/example", "testdata/conformance"} {
		names, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, n := range names {
			data, err := os.ReadFile(n)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Add([]byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {window: 1ns, requests_per_unit: 4294967295}\n"))
	// Anchors, aliases and merge keys: of lists, repeated, of themselves,
	// under metadata and under rate_limit.
	f.Add([]byte("domain: d\ndescriptors:\n  - key: a\n    metadata: &m {requests_per_unit: 1.5, algorithm: GCRA}\n    rate_limit: &r {<<: [*m, {unit: second}], requests_per_unit: 2, <<: *r}\n  - &k\n    key: b\n    <<: *m\n    rate_limit: *r\n    rate_limit: {name: n}\n    descriptors: [*k]\n"))
	f.Add([]byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata:\n      a0: &a0 {x: 1, y: 2}\n      a1: &a1 {<<: [*a0, *a0]}\n      a2: {<<: [*a1, *a1], ? z : *a1}\n"))
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDomain("f.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		for _, r := range d.Rules {
			if r.Limit.Limit > 0 {
				if err := r.Limit.ValidateFields(); err != nil {
					t.Fatalf("rule %s loaded with an invalid policy: %v", r.Key, err)
				}
			}
		}
		cfg, err := NewConfig(d)
		if err != nil {
			t.Fatalf("one domain: %v", err)
		}
		if _, err := New(cfg, quiet); err != nil && (!errors.Is(err, hotlimit.ErrInvalidConfig) || !strings.Contains(err.Error(), "f.yaml: ")) {
			t.Fatalf("a server's error does not wrap ErrInvalidConfig and name the file: %v", err)
		}
	})
}

// FuzzShouldRateLimit: any request, as protobuf bytes, gets an error, of
// InvalidArgument or ResourceExhausted (the in-memory limiters never fail),
// or a response as the package documentation says: one status per
// descriptor, OK or OVER_LIMIT; one over the limit with its current_limit
// and nothing remaining; a descriptor's own limit as its current_limit; an
// unknown domain all OK without current_limit; and, as no rule of
// testdata/conformance is in quota mode, the request over the limit exactly
// when a descriptor is. Never a panic.
func FuzzShouldRateLimit(f *testing.F) {
	cfg, err := LoadDir("testdata/conformance")
	require.NoError(f, err)
	s, err := New(cfg)
	require.NoError(f, err)
	seed := func(req *pb.RateLimitRequest) {
		b, err := proto.Marshal(req)
		require.NoError(f, err)
		f.Add(b)
	}
	seed(&pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("per_hour", "x")}})
	seed(&pb.RateLimitRequest{Domain: "conf", HitsAddend: 7, Descriptors: []*rlext.RateLimitDescriptor{
		desc("replaced", "a"), desc("replacer", "b"), desc("unlimited", "c"), desc("blocked", "d"),
		{Entries: desc("override", "o").Entries, Limit: &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_HOUR}},
		{Entries: desc("refund", "r").Entries, HitsAddend: wrapperspb.UInt64(1 << 40), IsNegativeHits: true},
	}})
	seed(&pb.RateLimitRequest{Domain: "algos", Descriptors: []*rlext.RateLimitDescriptor{
		{Entries: desc("alg", "GCRA").Entries, Limit: &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE, UnitMultiplier: wrapperspb.UInt32(5)}},
	}})
	f.Fuzz(func(t *testing.T, data []byte) {
		var req pb.RateLimitRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		resp, err := s.ShouldRateLimit(context.Background(), &req)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.ResourceExhausted {
				t.Fatalf("error of code %v: %v", c, err)
			}
			return
		}
		if len(resp.Statuses) != len(req.Descriptors) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
		}
		_, known := cfg.domains[req.Domain]
		over := false
		for i, st := range resp.Statuses {
			switch st.Code {
			case pb.RateLimitResponse_OK:
			case pb.RateLimitResponse_OVER_LIMIT:
				over = true
				if st.CurrentLimit == nil || st.LimitRemaining != 0 {
					t.Fatalf("descriptor %d over the limit: %v", i, st)
				}
			default:
				t.Fatalf("descriptor %d: code %v", i, st.Code)
			}
			if !known && (st.Code != pb.RateLimitResponse_OK || st.CurrentLimit != nil) {
				t.Fatalf("descriptor %d of unknown domain %q: %v", i, req.Domain, st)
			}
			if o := req.Descriptors[i].Limit; o != nil && known {
				want := &pb.RateLimitResponse_RateLimit{RequestsPerUnit: o.RequestsPerUnit,
					Unit: pb.RateLimitResponse_RateLimit_Unit(o.Unit), UnitMultiplier: o.UnitMultiplier}
				if !proto.Equal(want, st.CurrentLimit) {
					t.Fatalf("descriptor %d of limit %v: current_limit %v", i, o, st.CurrentLimit)
				}
			}
		}
		want := pb.RateLimitResponse_OK
		if over {
			want = pb.RateLimitResponse_OVER_LIMIT
		}
		if resp.OverallCode != want {
			t.Fatalf("overall %v, want %v: %v", resp.OverallCode, want, resp)
		}
	})
}
