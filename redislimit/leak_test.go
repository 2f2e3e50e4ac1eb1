package redislimit_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// The tests of this file count the goroutines of the whole process and the
// connections of the Redis server: none of them runs in parallel with
// other tests.

// connectedClients returns the connections the server counts, the one
// asking included.
func connectedClients(t *testing.T, admin *redis.Client) int {
	t.Helper()
	info, err := admin.Info(context.Background(), "clients").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("INFO clients has no connected_clients: %q", info)
	return 0
}

// settleGoroutines waits, up to a deadline, for the goroutine count to come
// back to base, and returns the count it last saw.
func settleGoroutines(base int) int {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// TestNewCloseLeavesNothing: 1,000 Limiters built and closed on one client
// (with batches, leases, FailLocal, breakers; on a client that enforces
// deadlines and on one that does not), each asked alone and in a TakeAll
// before and after its Close, leave no goroutine once closed, though every
// one of them is still reachable (so that no cleanup, only Close, stops
// them), and open no connection the client does not reuse: the server
// counts as many as before. 100 more on clients of their own, each closed
// with its client, leave no goroutine and no connection either.
func TestNewCloseLeavesNothing(t *testing.T) {
	limiters := 1000
	if testing.Short() {
		limiters = 200
	}
	srv := redistest.Start(t)
	admin := newClient(t, srv)
	enforcing := newClient(t, srv)
	plain := redis.NewClient(&redis.Options{Addr: srv.Addr}) // deadlines on its own goroutine
	t.Cleanup(func() { _ = plain.Close() })
	ctx := context.Background()
	for _, c := range []*redis.Client{enforcing, plain} {
		require.NoError(t, c.Ping(ctx).Err())
		// One of each call first: the pools hold the connections they reuse.
		l, err := redislimit.New(c, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Minute}, redislimit.WithBatch(16, 2))
		require.NoError(t, err)
		l.Allow("warm")
		redislimit.TakeAll(ctx, []redislimit.Take{{Limiter: l, Key: "warm", N: 1}})
		require.NoError(t, l.Close())
		l.Allow("warm")
	}
	base, conns := runtime.NumGoroutine(), connectedClients(t, admin)
	kept := make([]*redislimit.Limiter, 0, limiters)
	for i := range limiters {
		a := algorithms[i%len(algorithms)]
		opts := []hotlimit.Option{redislimit.WithBatch(16, 2), redislimit.WithBreaker(3, time.Second), redislimit.WithTimeout(exactTimeout)}
		if i%3 == 0 && redislimit.CanLease(a) {
			opts = append(opts, redislimit.WithLease(5, time.Minute))
		}
		if i%4 == 0 {
			opts = append(opts, redislimit.WithFailPolicy(redislimit.FailLocal))
		}
		client := enforcing
		if i%2 == 1 {
			client = plain
		}
		l, err := redislimit.New(client, hotlimit.Config{Algorithm: a, Limit: 100, Window: time.Minute}, opts...)
		require.NoError(t, err)
		kept = append(kept, l)
		key := "leak:" + strconv.Itoa(i)
		_, err = l.TakeContext(ctx, key, 1)
		require.NoError(t, err)
		takes := []redislimit.Take{{Limiter: l, Key: key, N: 1}}
		redislimit.TakeAll(ctx, takes)
		require.NoError(t, takes[0].Err)
		require.NoError(t, l.Close())
		_, err = l.TakeContext(ctx, key, 1) // closed: a round trip of its own
		require.NoError(t, err)
		redislimit.TakeAll(ctx, takes)
		require.NoError(t, takes[0].Err)
	}
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines left by %d closed Limiters", limiters)
	assert.LessOrEqual(t, connectedClients(t, admin), conns, "connections left by %d closed Limiters", limiters)
	runtime.KeepAlive(kept)

	for i := range 100 {
		client := redis.NewClient(&redis.Options{Addr: srv.Addr})
		l, err := redislimit.New(client, hotlimit.Config{Algorithm: algorithms[i%len(algorithms)], Limit: 100, Window: time.Minute}, redislimit.WithBatch(16, 2))
		require.NoError(t, err)
		_, err = l.TakeContext(ctx, "own", 1)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		require.NoError(t, client.Close())
	}
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines left by 100 Limiters closed with their clients")
	// The server counts a connection closed once it reads its end.
	var now int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if now = connectedClients(t, admin); now <= conns {
			break
		}
	}
	assert.LessOrEqual(t, now, conns, "connections left by 100 Limiters closed with their clients")
}
