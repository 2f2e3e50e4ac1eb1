package redislimit

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// newNodesLimiter returns a Limiter on a cluster client whose clock is
// now, for tests of its per-node breakers; it never contacts Redis.
func newNodesLimiter(t *testing.T, now *atomic.Int64) *Limiter {
	t.Helper()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = client.Close() })
	l, err := New(client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.NotNil(t, l.nodes, "a breaker per node")
	return l
}

// nodeAddrs returns the addresses l holds a breaker for, sorted.
func nodeAddrs(l *Limiter) []string {
	var addrs []string
	l.nodes.Range(func(addr string, _ *breaker) bool {
		addrs = append(addrs, addr)
		return true
	})
	slices.Sort(addrs)
	return addrs
}

// TestNodeBreakersOfGoneNodesAreDropped: the breakers of cluster nodes that
// no key has mapped to for a while (a master replaced by a failover, or
// left without slots by a resharding) are dropped, whether a new node
// comes or not, and a node in use keeps its breaker, open or not; an open
// breaker is kept while its cooldown runs, however long unseen.
func TestNodeBreakersOfGoneNodesAreDropped(t *testing.T) {
	var now atomic.Int64
	l := newNodesLimiter(t, &now)
	a, b := l.nodeBreaker("a:1"), l.nodeBreaker("b:1")
	for range l.set.failures {
		a.failure() // a is down: its breaker opens
	}
	require.NotZero(t, a.openUntil.Load())
	assert.Same(t, a, l.nodeBreaker("a:1"), "a node in use keeps its breaker")

	// A failover: a's slots go to c. b stays in use.
	for range 4 {
		now.Add(int64(30 * time.Second))
		assert.Same(t, b, l.nodeBreaker("b:1"))
	}
	l.nodeBreaker("c:1")
	assert.Equal(t, []string{"a:1", "b:1", "c:1"}, nodeAddrs(l), "a, unseen for two minutes, is kept while its cooldown runs")
	a.openUntil.Store(hotlimit.Monotonic() - 1) // its cooldown ends

	// A resharding moves b's slots to c: no new node comes.
	for range 6 {
		now.Add(int64(30 * time.Second))
		l.nodeBreaker("c:1")
	}
	assert.Equal(t, []string{"c:1"}, nodeAddrs(l), "b, unseen for three minutes, and a, whose cooldown ended, are dropped as c is used")

	// a comes back (its address reused): a fresh breaker, closed.
	again := l.nodeBreaker("a:1")
	assert.NotSame(t, a, again)
	assert.Zero(t, again.openUntil.Load())
}

// TestNodeBreakersBoundedUnderChurn: while goroutines look up breakers for
// nodes that come and go (a new address every ten seconds of the clock,
// each used for twenty), the map holds no more than the nodes seen within
// the last few minutes, and each lookup of a live node returns the breaker
// in the map.
func TestNodeBreakersBoundedUnderChurn(t *testing.T) {
	var now atomic.Int64
	l := newNodesLimiter(t, &now)
	const steps, workers = 200, 4
	var most atomic.Int64
	for step := range steps {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				addr := fmt.Sprintf("n%d:1", step-(w%2)) // this step's node and the last one's
				b := l.nodeBreaker(addr)
				if got, ok := l.nodes.Load(addr); ok {
					assert.Same(t, got, b, "step %d: %s", step, addr)
				}
				n := int64(l.nodes.Size())
				// most only grows: a CAS that lost to another writer
				// rereads it, and stops once it holds n or more.
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
			})
		}
		wg.Wait()
		now.Add(int64(10 * time.Second))
	}
	assert.LessOrEqual(t, most.Load(), int64(30), "nodes held at once, of %d seen", steps)
	assert.LessOrEqual(t, l.nodes.Size(), 30)
}

// TestNodeBreakerDroppedDuringItsRefreshIsMadeAgain forces the prune that a
// new node's breaker runs between a lookup's reading of a breaker unseen for
// two minutes and its refresh: the prune drops it, and the lookup makes a
// fresh one in the map instead of returning the dropped one, so that the
// outcome of the call it guards is not lost. Returning the dropped breaker,
// a failure told to it left the node's breaker in the map unaware: a node
// that does not answer was asked a call more before its breaker opened.
func TestNodeBreakerDroppedDuringItsRefreshIsMadeAgain(t *testing.T) {
	var now atomic.Int64
	l := newNodesLimiter(t, &now)
	old := l.nodeBreaker("a:1")
	now.Add(int64(2 * time.Minute))
	ran := false
	refreshHook = func() {
		if !ran {
			ran = true
			l.nodeBreaker("c:1") // a new node: the prune drops a, unseen for two minutes
			require.Equal(t, []string{"c:1"}, nodeAddrs(l))
		}
	}
	t.Cleanup(func() { refreshHook = nil })
	b := l.nodeBreaker("a:1")
	require.True(t, ran, "the prune ran during the lookup")
	assert.NotSame(t, old, b, "a fresh breaker")
	b.failure() // the call it guards fails
	got := l.nodeBreaker("a:1")
	assert.Same(t, b, got, "the breaker the lookup returned is a's in the map")
	assert.Equal(t, int64(1), got.fails.Load(), "the failure is counted")
	assert.Equal(t, []string{"a:1", "c:1"}, nodeAddrs(l))
}

// TestNodeBreakerDroppedAndMadeAgainDuringItsRefreshIsTheNewOne: a prune
// drops a node's breaker between a lookup's reading of it (unseen for two
// minutes) and its refresh, and another lookup of the node makes a fresh
// one meanwhile: the first lookup returns that fresh breaker, the one in
// the map, not the dropped one, so that both calls' outcomes go to one
// breaker.
func TestNodeBreakerDroppedAndMadeAgainDuringItsRefreshIsTheNewOne(t *testing.T) {
	var now atomic.Int64
	l := newNodesLimiter(t, &now)
	old := l.nodeBreaker("a:1")
	now.Add(int64(2 * time.Minute))
	ran := false
	var other *breaker
	refreshHook = func() {
		if !ran {
			ran = true
			l.nodeBreaker("c:1") // a new node: the prune drops a, unseen for two minutes
			require.Equal(t, []string{"c:1"}, nodeAddrs(l))
			other = l.nodeBreaker("a:1") // another call to a makes a fresh breaker
		}
	}
	t.Cleanup(func() { refreshHook = nil })
	b := l.nodeBreaker("a:1")
	require.True(t, ran, "the prune ran during the lookup")
	require.NotSame(t, old, other)
	assert.Same(t, other, b, "the breaker the other lookup made, not the dropped one")
	got, ok := l.nodes.Load("a:1")
	require.True(t, ok)
	assert.Same(t, got, b, "the one in the map")
}

// TestNodeBreakerDroppedAfterItsRefreshIsMadeAgain forces a lookup's refresh
// of a breaker unseen for two minutes, and its check that the breaker is
// still in the map, after a prune (run by a new node's lookup) judged the
// breaker idle and before the prune deletes it: the lookup returns the
// breaker then in the map, not the one the prune drops, so that the
// outcome of the call it guards is not lost.
func TestNodeBreakerDroppedAfterItsRefreshIsMadeAgain(t *testing.T) {
	var now atomic.Int64
	l := newNodesLimiter(t, &now)
	old := l.nodeBreaker("a:1")
	now.Add(int64(2 * time.Minute))
	var looked *breaker
	done := make(chan struct{})
	var paused atomic.Bool
	dropHook = func(addr string) {
		if addr != "a:1" || !paused.CompareAndSwap(false, true) {
			return
		}
		// The prune holds a's bucket, a judged idle. The lookup of a runs
		// until it returns, or waits for that bucket.
		go func() {
			defer close(done)
			looked = l.nodeBreaker("a:1")
		}()
		for !waitsOnBucket(done) {
			runtime.Gosched()
		}
	}
	t.Cleanup(func() { dropHook = nil })
	l.nodeBreaker("c:1") // a new node: its prune drops a
	require.True(t, paused.Load(), "the prune judged a idle")
	<-done
	got, ok := l.nodes.Load("a:1")
	require.True(t, ok, "a's breaker is in the map")
	assert.Same(t, got, looked, "the breaker the lookup returned is a's in the map")
	assert.NotSame(t, old, looked, "a fresh breaker")
}

// waitsOnBucket reports whether done is closed, or a goroutine other than the
// caller waits for a mutex (a bucket of the map of breakers) within a lookup
// of a node's breaker.
func waitsOnBucket(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
	}
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "sync.(*Mutex).Lock") && strings.Contains(g, ").nodeBreaker(") {
			return true
		}
	}
	return false
}
