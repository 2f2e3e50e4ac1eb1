package envoyrls

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebugLogsEachDescriptor: at debug level, each descriptor of an
// answered request is a log line naming its entries, the rule it matched
// (none, or an unlimited one, said so), its hits and its answer, over the
// limit or not (a rule in shadow mode answers OK over it, one in quota mode
// OVER_LIMIT); above debug, none is written.
func TestDebugLogsEachDescriptor(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte(`domain: web
descriptors:
  - key: ip
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: internal
    rate_limit: {unlimited: true}
  - key: beta
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: plan
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{
		desc("ip", "192.0.2.1"), desc("internal", "yes"), desc("path", "/x"), desc("beta", "ann"), desc("plan", "free"),
	}}
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		t.Run(level.String(), func(t *testing.T) {
			var buf bytes.Buffer
			s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			for range 2 {
				_, err := s.ShouldRateLimit(context.Background(), req)
				require.NoError(t, err)
			}
			lines := logLines(buf.String(), "descriptor")
			if level > slog.LevelDebug {
				assert.Empty(t, lines, "no debug lines above debug")
				return
			}
			require.Len(t, lines, 10, "a line per descriptor of each request")
			want := []struct {
				entry, rule, code string
				remaining         float64
				shadow, over      bool
			}{
				{"ip=192.0.2.1", "web.ip", "OK", 0, false, false},
				{"internal=yes", "web.internal (unlimited)", "OK", math.MaxUint32, false, false},
				{"path=/x", "none", "OK", 0, false, false},
				{"beta=ann", "web.beta", "OK", 0, true, false},
				{"plan=free", "web.plan", "OK", 0, false, false},
				{"ip=192.0.2.1", "web.ip", "OVER_LIMIT", 0, false, true},
				{"internal=yes", "web.internal (unlimited)", "OK", math.MaxUint32, false, false},
				{"path=/x", "none", "OK", 0, false, false},
				{"beta=ann", "web.beta", "OK", 0, true, true},
				{"plan=free", "web.plan", "OVER_LIMIT", 0, false, true},
			}
			for i, w := range want {
				l := lines[i]
				assert.Equal(t, "web", l["domain"], "line %d", i)
				assert.Equal(t, float64(i%5), l["index"], "line %d", i)
				assert.Equal(t, []any{w.entry}, l["entries"], "line %d", i)
				assert.Equal(t, w.rule, l["rule"], "line %d", i)
				assert.Equal(t, w.code, l["code"], "line %d", i)
				assert.Equal(t, float64(1), l["hits"], "line %d", i)
				assert.Equal(t, w.remaining, l["limit_remaining"], "line %d", i)
				assert.Equal(t, w.shadow, l["shadow"], "line %d", i)
				assert.Equal(t, w.over, l["over_limit"], "line %d: the shadow rule's second hit would be limited", i)
				assert.Equal(t, false, l["undecided"], "line %d", i)
			}
		})
	}
}

// logLines returns the JSON log lines of out whose msg is msg, decoded.
func logLines(out, msg string) []map[string]any {
	var lines []map[string]any
	for _, l := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// TestDebugLogsADescriptorRedisCouldNotDecide: the debug line of a
// descriptor whose limit Redis could not decide says so (undecided), its
// over_limit being the failure policy's answer, not the key's count: under
// FailClosed every hit of a rule in shadow mode is over_limit, and without
// undecided its lines would name every client as one a rollout would turn
// away; under FailOpen none is.
func TestDebugLogsADescriptorRedisCouldNotDecide(t *testing.T) {
	addr, redisServer := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	cfg := configOf(t, "web.yaml", `
domain: web
descriptors:
  - key: ip
    rate_limit: {unit: hour, requests_per_unit: 100}
  - key: beta
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 100}
`)
	redisServer.Kill()
	for _, tc := range []struct {
		policy redislimit.FailPolicy
		code   string
		over   bool
	}{
		{redislimit.FailClosed, "OVER_LIMIT", true},
		{redislimit.FailOpen, "OK", false},
	} {
		var buf bytes.Buffer
		s, err := New(cfg, WithBackendErrors(false), WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))),
			WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(tc.policy), redislimit.WithPrefix(t.Name()+":")))))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		askKeys(t, s, "web", false, "ip", "beta")
		lines := logLines(buf.String(), "descriptor")
		require.Len(t, lines, 2, "%v", tc.policy)
		for i, code := range []string{tc.code, "OK"} {
			assert.Equal(t, code, lines[i]["code"], "%v line %d", tc.policy, i)
			assert.Equal(t, tc.over, lines[i]["over_limit"], "%v line %d: the failure policy's answer", tc.policy, i)
			assert.Equal(t, true, lines[i]["undecided"], "%v line %d", tc.policy, i)
		}
	}
}
