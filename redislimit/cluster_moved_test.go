package redislimit_test

import (
	"context"
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

// TestClusterSlotMigrationRedirects moves a key's slot from one master to
// another under a client whose slot map stays stale (it reloads it only on
// a redirection): while the slot is migrating, a fresh key of the slot is
// made on the target (ASK); once the key has moved, a take and a refund of
// a receipt taken before are redirected to the new owner (MOVED) and counted
// there, once each, as the give-back is never sent twice: with a frozen
// clock the key admits exactly the limit, less the takes, plus the refund.
func TestClusterSlotMigrationRedirects(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, 0)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true,
		ClusterStateReloadInterval: time.Hour})
	t.Cleanup(func() { _ = client.Close() })
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	clock := frozenClock()
	lim := newExact(t, client, c, clock, redislimit.WithBatch(0, 0))
	fresh := newExact(t, client, c, clock, redislimit.WithBatch(0, 0), redislimit.WithPrefix("fresh:"))

	const key = "migrating"
	redisKey := lim.RedisKey(key)
	source := cl.MasterOf(redisKey)
	require.NotNil(t, source)
	var target *redistest.Server
	for _, m := range cl.Masters() {
		if m != source {
			target = m
			break
		}
	}
	require.NotNil(t, target)
	slot, err := source.Client().ClusterKeySlot(ctx, redisKey).Result()
	require.NoError(t, err)
	id := func(s *redistest.Server) string {
		v, err := s.Client().Do(ctx, "CLUSTER", "MYID").Text()
		require.NoError(t, err)
		return v
	}
	sourceID, targetID := id(source), id(target)

	var r hotlimit.Receipt
	for i := range 3 {
		var d hotlimit.Decision
		d, r = lim.TakeReceipt(key, 1)
		require.True(t, d.Allowed, "take %d on the source", i+1)
	}

	// Migrating: the key is still on the source; a key of the slot that the
	// source does not hold is made on the target.
	require.NoError(t, target.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", sourceID).Err())
	require.NoError(t, source.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", targetID).Err())
	d := take(t, fresh, key, 1)
	assert.Equal(t, c.Limit-1, d.Remaining, "a fresh key of a migrating slot")
	freshKey := fresh.RedisKey(key)
	var made *redis.IntCmd
	_, err = target.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "ASKING") // the target answers a slot it imports only after ASKING
		made = p.Exists(ctx, freshKey)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1), made.Val(), "made on the target (ASK)")
	assert.Zero(t, source.Client().Exists(ctx, freshKey).Val(), "not on the source")
	assert.Equal(t, c.Limit-3, take(t, lim, key, 0).Remaining, "the key is still read on the source")

	// Migrated: the key and the slot are the target's; the client's map
	// still says the source.
	port := target.Addr[strings.LastIndex(target.Addr, ":")+1:]
	require.NoError(t, source.Client().Do(ctx, "MIGRATE", "127.0.0.1", port, redisKey, 0, 5000).Err())
	for _, m := range cl.Masters() {
		require.NoError(t, m.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", targetID).Err(), "SETSLOT on %s", m.Addr)
	}
	master, err := client.MasterForKey(ctx, redisKey)
	require.NoError(t, err)
	require.Equal(t, source.Addr, master.Options().Addr, "the client's slot map is stale")

	require.NoError(t, lim.RefundContext(ctx, key, r), "the refund, redirected (MOVED)")
	left, err := target.Client().Get(ctx, redisKey).Result()
	require.NoError(t, err, "the key is on the target")
	assert.Equal(t, strconv.Itoa(3-1), strings.Fields(left)[1], "the target's count, after the refund")
	for i := range c.Limit - 2 {
		assert.True(t, take(t, lim, key, 1).Allowed, "take %d after the migration", i+4)
	}
	assert.False(t, take(t, lim, key, 1).Allowed, "past the limit")
}
