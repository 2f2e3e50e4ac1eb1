package envoyrls

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDescriptorKeyBoundsLongParts: an entry key or value longer than
// maxKeyPart bytes, which a client chooses (a header's value, an override's
// entries), counts under its SHA-256, so that a counter key of one entry
// holds a few hundred bytes whatever the request carries, not the megabytes a
// gRPC message may; parts up to maxKeyPart are kept as they are, so their
// counters (Redis keys too) keep their names; and the digest form shares no
// key with any other descriptor, long or short, its digest spelled out as a
// value included. Making such a key copies neither part.
func TestDescriptorKeyBoundsLongParts(t *testing.T) {
	e := func(pairs ...string) []*rlext.RateLimitDescriptor_Entry { return desc(pairs...).Entries }
	long := strings.Repeat("v", 1<<20)
	entries := e(long, long+"x")
	var k string
	allocated := limitertest.LeastAllocated(func() { k = descriptorKey("d", entries, nil) })
	assert.LessOrEqual(t, len(k), 2*(sha256.Size+4)+2, "a descriptor of two 1 MiB parts")
	assert.Less(t, allocated, uint64(4<<10), "bytes allocated by its key: the parts are hashed where they lie, not copied")

	edge := strings.Repeat("v", maxKeyPart)
	assert.Contains(t, descriptorKey("d", e("k", edge), nil), edge, "a value of maxKeyPart bytes is kept")
	assert.Contains(t, descriptorKey("d", e(edge, ""), nil), edge, "an entry key of maxKeyPart bytes is kept")

	sum := sha256.Sum256([]byte(edge + "v"))
	cases := [][]*rlext.RateLimitDescriptor_Entry{
		e("k", edge+"v"),
		e("k", edge+"w"),
		e("k", "w"+edge),
		e("k", edge),
		e("k", string(sum[:])),
		e("k", edge+"v", "a", "b"),
		e(edge+"v", ""),
		e(edge+"w", ""),
		e(edge, ""),
		e(string(sum[:]), ""),
		e(edge+"v", "x"),
	}
	seen := map[string]int{}
	for i, c := range cases {
		k := descriptorKey("d", c, nil)
		if j, dup := seen[k]; dup {
			t.Errorf("cases %d and %d share key %q", j, i, k)
		}
		seen[k] = i
	}
	assert.Equal(t, len(cases), len(seen), "distinct keys")
}

// TestLongValuesCountApart: two requests whose descriptor values are 1 MiB
// long and differ only in their last byte count under counters of their
// own, and each is over its limit on its second request.
func TestLongValuesCountApart(t *testing.T) {
	d, err := ParseDomain("long.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	srv, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	long := strings.Repeat("v", 1<<20)
	ask := func(value string) pb.RateLimitResponse_Code {
		resp, err := srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{
			Domain: "d", Descriptors: []*rlext.RateLimitDescriptor{desc("k", value)}, HitsAddend: 1})
		require.NoError(t, err)
		return resp.OverallCode
	}
	assert.Equal(t, pb.RateLimitResponse_OK, ask(long+"a"))
	assert.Equal(t, pb.RateLimitResponse_OK, ask(long+"b"), "a value that differs in its last byte")
	assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, ask(long+"a"))
	assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, ask(long+"b"))
}
