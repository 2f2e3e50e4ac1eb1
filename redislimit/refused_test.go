package redislimit_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/redislimit"
)

// TestRefusedRedisNamedWithoutDialRetries: against a Redis that refuses
// connections, a client that dials again after a refusal (go-redis's
// DialerRetries, 5 by default, DialerRetryTimeout apart; an hour apart here,
// so that only the limiter's deadline can end the call) fails the call at
// the deadline, with an error that says no answer came and not why; one
// with DialerRetries 1 and MaxRetries -1, as the README advises, fails it at
// once with the dial's own error, under a limiter timeout of an hour that
// the call could not otherwise have ended before.
func TestRefusedRedisNamedWithoutDialRetries(t *testing.T) {
	retrying := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialerRetryTimeout: time.Hour})
	t.Cleanup(func() { _ = retrying.Close() })
	lim := newLimiter(t, retrying, faultConfig, frozenClock(), redislimit.WithTimeout(time.Second), redislimit.WithBreaker(0, 0))
	_, err := lim.TakeContext(context.Background(), "k", 1)
	require.Error(t, err)
	assert.Equal(t, "timeout", redislimit.Reason(err))
	assert.Contains(t, err.Error(), "no answer from Redis before the deadline")
	assert.NotErrorIs(t, err, syscall.ECONNREFUSED, "the refusal is not in the error")

	once := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { _ = once.Close() })
	lim = newLimiter(t, once, faultConfig, frozenClock(), redislimit.WithTimeout(time.Hour), redislimit.WithBreaker(0, 0))
	_, err = lim.TakeContext(context.Background(), "k", 1)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "the dial's error, at once")
	assert.Equal(t, "error", redislimit.Reason(err))
}
