package redislimit

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNodeBreakerInSteadyUseIsKept: a node that keys map to every ten
// seconds or less keeps its breaker, open or not, however long it has been in use,
// when a new node's breaker is made: its use is recorded often enough that
// it never looks unseen for the minute after which a breaker is dropped.
func TestNodeBreakerInSteadyUseIsKept(t *testing.T) {
	var now atomic.Int64
	l := newNodesLimiter(t, &now)
	b := l.nodeBreaker("b:1")
	for range l.set.failures {
		b.failure() // b is down: its breaker opens
	}
	for _, step := range []time.Duration{10, 10, 10, 10, 10, 9} { // used at 10 s, 20 s, ..., 50 s, 59 s
		now.Add(int64(step * time.Second))
		assert.Same(t, b, l.nodeBreaker("b:1"))
	}
	now.Add(int64(6 * time.Second))
	l.nodeBreaker("c:1") // a new node at 65 s: unseen breakers are dropped
	assert.Equal(t, []string{"b:1", "c:1"}, nodeAddrs(l), "b, used 6 s ago, is kept")
	assert.Same(t, b, l.nodeBreaker("b:1"), "with its breaker, still open")
	assert.NotZero(t, b.openUntil.Load())
}
