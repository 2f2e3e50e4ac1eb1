package envoyrls

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refEdges checks, on h, what the reference answers in the cases its
// matching code decides by a path of its own, which the random requests
// of TestReferenceMatching never take.
func refEdges(t *testing.T, h *harness) {
	t.Run("DescriptorWithoutEntries", func(t *testing.T) {
		// The reference's walk takes no step: no limit, answered OK,
		// beside a descriptor that counts.
		resp := h.call(t, "conf", 0, &rlext.RateLimitDescriptor{}, desc("per_hour", "noentries"+h.run))
		assert.Equal(t, ok, resp.OverallCode)
		assert.Equal(t, ok, resp.Statuses[0].Code)
		assert.Nil(t, resp.Statuses[0].CurrentLimit)
		assert.Zero(t, resp.Statuses[0].LimitRemaining)
		assert.Nil(t, resp.Statuses[0].DurationUntilReset)
		assert.Equal(t, uint32(2), resp.Statuses[1].LimitRemaining)
	})
	t.Run("SameDescriptorTwice", func(t *testing.T) {
		// One counter: the reference increments its key twice in one
		// pipeline, and reports each increment's count.
		d := desc("two_a", "twice"+h.run)
		resp := h.call(t, "conf", 0, d, d)
		assert.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining)
		assert.Equal(t, uint32(3), resp.Statuses[1].LimitRemaining)
		resp = h.call(t, "conf", 2, d, d, d)
		assert.Equal(t, []uint32{1, 0, 0}, []uint32{resp.Statuses[0].LimitRemaining, resp.Statuses[1].LimitRemaining, resp.Statuses[2].LimitRemaining})
		assert.Equal(t, []pb.RateLimitResponse_Code{ok, over, over}, []pb.RateLimitResponse_Code{resp.Statuses[0].Code, resp.Statuses[1].Code, resp.Statuses[2].Code})
		assert.Equal(t, over, resp.OverallCode)
	})
	t.Run("OwnLimitInUnknownDomain", func(t *testing.T) {
		// The reference looks the domain up before the descriptor's own
		// limit: an unknown domain limits nothing, whatever the request.
		d := desc("per_hour", "x")
		d.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 0, Unit: typev3.RateLimitUnit_HOUR}
		resp := h.call(t, "unknown-"+h.run, 0, d)
		assert.Equal(t, ok, resp.OverallCode)
		assert.Nil(t, resp.Statuses[0].CurrentLimit)
	})
	t.Run("OwnLimitOverUnlimitedAndReplaced", func(t *testing.T) {
		// A descriptor's own limit applies before any rule: over an
		// unlimited rule, and over a rule another descriptor replaces
		// (the limit has no name to replace).
		u := desc("unlimited", "own"+h.run)
		u.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
		resp := h.call(t, "conf", 0, u)
		require.NotNil(t, resp.Statuses[0].CurrentLimit)
		assert.Equal(t, uint32(0), resp.Statuses[0].LimitRemaining)
		assert.Equal(t, over, h.call(t, "conf", 0, u).OverallCode)

		r := desc("replaced", "own"+h.run)
		r.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 7, Unit: typev3.RateLimitUnit_HOUR}
		resp = h.call(t, "conf", 0, desc("replacer", "own"+h.run), r)
		require.NotNil(t, resp.Statuses[1].CurrentLimit, "not replaced")
		assert.Equal(t, uint32(6), resp.Statuses[1].LimitRemaining)
	})
	t.Run("ReplacerWithOwnLimitReplacesNothing", func(t *testing.T) {
		// The reference's own limit carries no replaces: the rule the
		// descriptor matched replaces nothing then.
		r := desc("replacer", "ownr"+h.run)
		r.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 7, Unit: typev3.RateLimitUnit_HOUR}
		resp := h.call(t, "conf", 0, r, desc("replaced", "ownr"+h.run))
		require.NotNil(t, resp.Statuses[1].CurrentLimit, "replaced_limit still counts")
		assert.Equal(t, uint32(0), resp.Statuses[1].LimitRemaining)
	})
	t.Run("UnlimitedBesideOver", func(t *testing.T) {
		d := desc("two_b", "ub"+h.run)
		h.call(t, "conf", 2, d)
		resp := h.call(t, "conf", 0, desc("unlimited", "ub"+h.run), d)
		assert.Equal(t, over, resp.OverallCode)
		assert.Equal(t, uint32(math.MaxUint32), resp.Statuses[0].LimitRemaining)
		assert.Equal(t, ok, resp.Statuses[0].Code)
	})
}

// TestReferenceEdges runs refEdges in memory and, with redis-server, on
// Redis, where one request's descriptors go in one pipeline; with
// HOTLIMITD_REFERENCE set to the reference's binary (see
// TestReferenceDifferential), on the reference too, so that what refEdges
// expects is the reference's answer, not a reading of its code.
func TestReferenceEdges(t *testing.T) {
	t.Run("Memory", func(t *testing.T) { refEdges(t, inProcess(t)) })
	t.Run("Redis", func(t *testing.T) {
		addr, _ := startRedis(t)
		refEdges(t, inRedis(t, addr))
	})
	t.Run("Reference", func(t *testing.T) {
		bin := referenceBinary(t)
		inOneHour(t, time.Minute) // the rules count by the hour
		addr, _ := startRedis(t)
		// conf.yaml alone: the reference rejects algos.yaml's algorithms.
		dir := t.TempDir()
		data, err := os.ReadFile("testdata/conformance/conf.yaml")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "conf.yaml"), data, 0o644))
		run := strconv.FormatInt(time.Now().UnixNano(), 36)
		refAddr, _ := startReferenceOn(t, bin, addr, dir, run+"_")
		refEdges(t, &harness{client: dial(t, refAddr), run: run})
	})
}
