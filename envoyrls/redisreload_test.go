package envoyrls

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReloadsReleaseDroppedRedisLimiters: 1,000 reloads with limits on
// Redis, each dropping the limit in force for another, release what every
// dropped limiter held: its batch goroutines stop (with the collector off,
// so that only the reload's Close can stop them) and its lease's unspent
// requests go back to Redis, where a limiter of the same limit built later
// finds them. A gateway reloaded for months holds the limiters of its
// configuration only, and hands the other replicas back what it leased.
// It counts the goroutines of the process: it must not run in parallel.
func TestReloadsReleaseDroppedRedisLimiters(t *testing.T) {
	reloads := 1000
	if testing.Short() {
		reloads = 200
	}
	addr, _ := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	f := redislimit.Factory(client, redislimit.WithPrefix(t.Name()+":"), redislimit.WithTimeout(10*time.Second),
		redislimit.WithBatch(16, 2), redislimit.WithLease(5, time.Hour))
	dir := t.TempDir()
	load := func(limit int) *Config {
		t.Helper()
		rules := fmt.Sprintf("domain: m\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: %d, algorithm: FixedWindow}\n", limit)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "m.yaml"), []byte(rules), 0o644))
		cfg, err := LoadDir(dir)
		require.NoError(t, err)
		return cfg
	}
	const leased = 6 // the limit whose limiter comes back: a request and its lease of 5
	srv, err := New(load(leased), WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(f)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ask := func(value string) pb.RateLimitResponse_Code {
		t.Helper()
		resp, err := srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{desc("k", value)}})
		require.NoError(t, err)
		return resp.OverallCode
	}
	require.Equal(t, ok, ask("warm"))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	base := runtime.NumGoroutine() // the flushers of the limit in force included
	for i := range reloads {
		if i%2 == 0 {
			// Another limit: the reload closes the limiter of 6, which
			// gives its lease back.
			require.NoError(t, srv.Reload(load(100+i)))
			require.Equal(t, ok, ask("other"))
			continue
		}
		require.NoError(t, srv.Reload(load(leased)))
		// The key asked before the last reload: its lease of 5 is back in
		// Redis, so it passes, though a request and a lease had taken all 6.
		if i > 1 {
			assert.Equal(t, ok, ask("client"+strconv.Itoa(i-2)), "reload %d: the key whose lease the last reload dropped", i)
		}
		require.Equal(t, ok, ask("client"+strconv.Itoa(i)), "reload %d", i)
	}
	require.NoError(t, srv.Reload(load(leased))) // the limit of base in force again
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines left by %d reloads", reloads)
}

// settleGoroutines waits, up to a deadline, for the goroutine count to come
// back to base, and returns the count it last saw.
func settleGoroutines(base int) int {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine()
}
