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
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceDeciderIsNotALimitWhoseRedisIsDown: a rule of a limit in
// memory (3 per 30 s) and one on Redis (5 a minute) that fails open, in
// either order. Once Redis is killed, its limit's decisions are FailOpen's,
// Remaining 0, counting nothing; the memory limit decides each request, and
// TakePolicyContext and TakeEach name it, with its own count, and the
// observer hears of it, allowed. The Redis limit's made-up Remaining of 0
// was the least share left, so it was named as the limit that decided,
// and the observer heard near_limit of a count no limiter kept.
func TestServiceDeciderIsNotALimitWhoseRedisIsDown(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: 30 * time.Second}
	onRedis := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	for _, rule := range []service.Limits{{memory, onRedis}, {onRedis, memory}} {
		srv := redistest.Start(t)
		var now atomic.Int64
		now.Store(int64(time.Hour))
		var events []hotlimit.Event
		f := newMixedFactory(redislimit.Factory(srv.Client(), redislimit.WithFailPolicy(redislimit.FailOpen),
			redislimit.WithTimeout(exactTimeout)))
		svc, err := service.NewFromRules(service.Rules{Default: rule}, hotlimit.WithClock(now.Load), hotlimit.WithFactory(f.build),
			hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { events = append(events, e) })))
		require.NoError(t, err)
		t.Cleanup(func() { _ = svc.Close() })

		_, c, err := svc.TakePolicyContext(context.Background(), "u", "GET /", 1)
		require.NoError(t, err, "%v: Redis is up", rule)
		require.Equal(t, memory, c, "%v: 2 of 3 left is less than 4 of 5", rule)

		srv.Kill()
		d, c, err := svc.TakePolicyContext(context.Background(), "u", "GET /", 1)
		require.Error(t, err, "%v: Redis is down", rule)
		assert.True(t, d.Allowed, "%v: FailOpen", rule)
		assert.Equal(t, memory, c, "%v: the memory limit decided", rule)
		assert.Equal(t, 1, d.Remaining, "%v: with its own count", rule)

		d, each, err := svc.TakeEach(context.Background(), "u", "GET /", 1, nil)
		require.Error(t, err, "%v", rule)
		assert.True(t, d.Allowed, "%v", rule)
		require.Len(t, each, 2, "%v", rule)
		assert.Equal(t, memory, each[0].Config, "%v: the limit that decided first", rule)
		assert.NoError(t, each[0].Err, "%v", rule)
		assert.Equal(t, 0, each[0].Decision.Remaining, "%v: its own count", rule)
		assert.Equal(t, onRedis, each[1].Config, "%v", rule)
		assert.Error(t, each[1].Err, "%v: Redis could not decide", rule)

		require.Len(t, events, 3, "%v", rule)
		for i, e := range events {
			assert.Equal(t, memory, e.Policy, "%v event %d: the observer hears of the limit that decided", rule, i)
		}
		assert.Equal(t, hotlimit.OutcomeAllowed, events[1].Outcome, "%v: 1 of 3 left is not near the limit", rule)
	}
}
