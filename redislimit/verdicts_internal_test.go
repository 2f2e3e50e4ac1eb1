package redislimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestVerdictsOfABreakerAnsweredOnceTellSuccess: in one round trip, a
// breaker whose first call failed (a connection dropped mid-pipeline) while
// Redis answered another of its calls, with a reply or with the error of a
// key of another type, hears of success: its node answered. The failures in
// a row before it are forgotten, so the next failure does not open it.
// Only a round trip whose every call on the breaker failed is a failure.
func TestVerdictsOfABreakerAnsweredOnceTellSuccess(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	l, err := New(client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}, WithBreaker(2, time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	failed := errors.New("connection reset by peer")
	for _, answered := range []error{nil, replyError(wrongType + " Operation against a key holding the wrong kind of value")} {
		b := &l.breaker
		b.failure()
		var v verdicts
		v.add(l, b, failed)
		v.add(l, b, answered)
		v.add(l, b, failed)
		v.tell(context.Background())
		assert.Zero(t, b.fails.Load(), "%v: Redis answered a call: a success", answered)
		assert.Zero(t, b.openUntil.Load(), "%v: closed", answered)

		b.failure()
		v = verdicts{}
		v.add(l, b, failed)
		v.add(l, b, failed)
		v.tell(context.Background())
		assert.NotZero(t, b.openUntil.Load(), "every call failed: the second failure in a row opens it")
		b.success()
	}
}
