package redislimit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// replicaOf returns the node of cl that replicates m (ROLE).
func replicaOf(t *testing.T, cl *redistest.Cluster, m *redistest.Server) *redistest.Server {
	t.Helper()
	port := m.Addr[strings.LastIndex(m.Addr, ":")+1:]
	for _, s := range cl.Nodes {
		if s == m || !s.Running() {
			continue
		}
		role, err := s.Client().Do(context.Background(), "ROLE").Slice()
		require.NoError(t, err)
		if len(role) > 2 && role[0] == "slave" && fmt.Sprint(role[2]) == port {
			return s
		}
	}
	t.Fatalf("no replica of %s", m.Addr)
	return nil
}

// TestClusterFailoverLosesUnreplicatedTakes: Redis replicates to a replica
// after it answers, so a master that dies before its replica received its
// last writes takes them along: the replica promoted in its place holds
// the key as it was before them. The takes those writes counted then pass
// again (the over-admission the package's doc states: at most what the
// master admitted in its replica's lag), and a refund of one of them gives
// back a request the promoted key never counted, which passes a third
// time. The replica is frozen (SIGSTOP) and dropped by its master before the
// master takes, so that it deterministically misses exactly those writes,
// and is promoted by CLUSTER FAILOVER TAKEOVER once the master is killed.
func TestClusterFailoverLosesUnreplicatedTakes(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, 1)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	lim := newLimiter(t, cl.Client(), c, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBreaker(0, 0), redislimit.WithTimeout(time.Second))
	master := cl.Masters()[0]
	replica := replicaOf(t, cl, master)
	key := keysOn(t, cl, master, "lossy-", 1)[0]

	for i := range 2 {
		require.True(t, take(t, lim, key, 1).Allowed, "take %d, replicated", i+1)
	}
	acked, err := master.Client().Do(ctx, "WAIT", 1, 10000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, acked, "the replica has the first 2 takes")

	// Cut the replica off: frozen, it reads nothing, and once a large write
	// fills the sockets' buffers, the master drops it (past its output
	// buffer limit for replicas) and replicates nothing more to it.
	require.NoError(t, master.Client().ConfigSet(ctx, "client-output-buffer-limit", "replica 1mb 0 0").Err())
	replica.Pause()
	require.NoError(t, master.Client().Set(ctx, "ballast:{"+key+"}", strings.Repeat("x", 32<<20), 0).Err())
	require.Eventually(t, func() bool {
		info, err := master.Client().Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:0")
	}, 10*time.Second, 10*time.Millisecond, "the master drops the frozen replica")
	var lost hotlimit.Receipt
	for i := range 3 {
		var d hotlimit.Decision
		d, lost = lim.TakeReceipt(key, 1)
		require.True(t, d.Allowed, "take %d, not replicated", i+3)
	}
	require.False(t, take(t, lim, key, 1).Allowed, "the master counted the limit")
	master.Kill()
	replica.Resume()
	require.NoError(t, replica.Client().Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err())
	require.NoError(t, cl.WaitFailover(master, 30*time.Second))

	d := waitForRedis(t, lim, key, 10*time.Second)
	require.True(t, d.Allowed, "the promoted replica counted 2 takes of the key")
	assert.Equal(t, c.Limit-3, d.Remaining, "the promoted replica counted 2 takes of the key")
	assert.True(t, take(t, lim, key, 1).Allowed)
	assert.True(t, take(t, lim, key, 1).Allowed, "the 3 lost takes pass again")
	assert.False(t, take(t, lim, key, 1).Allowed)

	require.NoError(t, lim.RefundContext(ctx, key, lost), "the refund of a lost take")
	assert.True(t, take(t, lim, key, 1).Allowed, "a lost take refunded passes once more")
	assert.False(t, take(t, lim, key, 1).Allowed)
}
