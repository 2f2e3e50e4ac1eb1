package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestClusterOpenBreakerOutlivesIdleNode kills a master of a cluster whose
// limiter has a breaker per master (one failure, an hour's cooldown): its
// key's first call fails and opens the breaker. Then no key of that master
// comes for two minutes, while another master's keys keep coming, which
// drops the breakers of the nodes unseen for a minute. The dead master's
// breaker is open for the rest of its hour, so it is kept: its key's next
// call is turned away at once, not sent to the dead master again as by a
// fresh, closed breaker.
func TestClusterOpenBreakerOutlivesIdleNode(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	lim := newLimiter(t, cl.Client(), faultConfig, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBreaker(1, time.Hour), redislimit.WithTimeout(exactTimeout))
	masters := cl.Masters()
	require.Len(t, masters, 3)
	dead := keysOn(t, cl, masters[0], "dead-", 1)[0]
	live := keysOn(t, cl, masters[1], "live-", 1)[0]
	for _, key := range []string{dead, live} {
		require.True(t, take(t, lim, key, 1).Allowed, "%s before the kill", key)
	}
	masters[0].Kill()

	r := call(lim, dead, 1)
	require.Error(t, r.err, "the dead master's key")
	require.NotErrorIs(t, r.err, redislimit.ErrBreakerOpen, "the failure that opens the breaker")
	require.ErrorIs(t, call(lim, dead, 1).err, redislimit.ErrBreakerOpen, "open after one failure")

	for range 8 { // two minutes of the live master's traffic alone
		clock.Add(int64(15 * time.Second))
		_, err := lim.TakeContext(context.Background(), live, 0)
		require.NoError(t, err, "the live master's key")
	}
	r = call(lim, dead, 1)
	assert.ErrorIs(t, r.err, redislimit.ErrBreakerOpen, "the breaker is open for an hour: the dead master is not asked")
	assert.Less(t, r.took, prompt, "an open breaker answers without asking Redis")
}
