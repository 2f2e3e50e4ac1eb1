package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestRefundNowContextOfNothingSendsNothing: RefundNowContext of n < 1
// gives nothing back, as documented, without asking Redis: with Redis
// unreachable it returns no error, where a give-back sent would fail.
func TestRefundNowContextOfNothingSendsNothing(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	lim, err := redislimit.New(client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim.Close() })
	for _, n := range []int{0, -1} {
		assert.NoError(t, lim.RefundNowContext(context.Background(), "k", n), "n=%d", n)
	}
	assert.Error(t, lim.RefundNowContext(context.Background(), "k", 1), "a give-back sent fails: Redis is unreachable")
}
