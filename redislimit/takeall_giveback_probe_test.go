package redislimit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// downWhile fails every command and pipeline of its client, without
// sending it, while down is set: Redis unreachable, at an exact point.
type downWhile struct{ down atomic.Bool }

var errDown = errors.New("down: connection refused")

func (h *downWhile) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *downWhile) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.down.Load() {
			cmd.SetErr(errDown)
			return errDown
		}
		return next(ctx, cmd)
	}
}

func (h *downWhile) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.down.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(errDown)
			}
			return errDown
		}
		return next(ctx, cmds)
	}
}

// TestTakeAllGiveBackProbesBeforeItsTake: a take asked in its turn whose
// limiter's breaker has ended its cooldown gives back its GiveBack first,
// as RefundContext before TakeReceiptContext would: the give-back is the
// breaker's probe, and once it passes, the take is decided by Redis. The
// outcome, and the key's state after, equal a twin's asked one by one.
func TestTakeAllGiveBackProbesBeforeItsTake(t *testing.T) {
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour}
	// build returns two limiters on one client, their breaker open after
	// one failure, and a receipt of 3 of the first's.
	build := func(prefix string) (a, b *redislimit.Limiter, r hotlimit.Receipt) {
		client := newClient(t, srv)
		var h downWhile
		client.AddHook(&h)
		opts := []hotlimit.Option{frozenClock(), redislimit.WithBreaker(1, time.Minute), redislimit.WithFailPolicy(redislimit.FailClosed)}
		a = newExact(t, client, c, append(opts, redislimit.WithPrefix(prefix+"a:"))...)
		b = newExact(t, client, c, append(opts, redislimit.WithPrefix(prefix+"b:"))...)
		_, r, err := a.TakeReceiptContext(context.Background(), "k", 3)
		require.NoError(t, err)
		require.Equal(t, 3, r.N)
		h.down.Store(true)
		_, _, err = a.TakeReceiptContext(context.Background(), "k", 1)
		require.Error(t, err)
		_, _, err = a.TakeReceiptContext(context.Background(), "k", 1)
		require.ErrorIs(t, err, redislimit.ErrBreakerOpen, "a's breaker is open")
		h.down.Store(false)
		return a, b, r
	}
	a, b, r := build("all:")
	sa, sb, sr := build("one:")
	breakerNow.Add(int64(2 * time.Minute)) // the cooldown is over: the next call probes

	takes := []redislimit.Take{{Limiter: a, Key: "k", N: 4, GiveBack: r}, {Limiter: b, Key: "k", N: 1}}
	redislimit.TakeAll(context.Background(), takes)

	backErr := sa.RefundContext(context.Background(), "k", sr)
	d, rc, err := sa.TakeReceiptContext(context.Background(), "k", 4)
	require.NoError(t, backErr, "the twin's give-back probes, and passes")
	require.NoError(t, err)
	assert.NoError(t, takes[0].GiveBackErr, "the give-back is the probe, not refused by it")
	assert.NoError(t, takes[0].Err)
	assert.Equal(t, d, takes[0].Decision)
	assert.True(t, takes[0].Decision.Allowed, "the give-back made room for 4")
	assert.Equal(t, rc, takes[0].Receipt)
	assert.Equal(t, take(t, sa, "k", 0), take(t, a, "k", 0), "a's state")
	assert.Equal(t, take(t, sb, "k", 1), takes[1].Decision, "b")
}

// TestTakeAllClusterGiveBackProbesTheLookup: on a cluster client that
// cannot load its slot map, a take asked in its turn whose limiter's
// breaker has ended its cooldown gives back its GiveBack first, as
// RefundContext before TakeReceiptContext would: the give-back's lookup
// is the probe, and fails with the lookup's error; the take then finds the
// breaker open again, and its failure policy hears of ErrBreakerOpen.
// Probed by the take instead, the errors would be the other way round.
func TestTakeAllClusterGiveBackProbesTheLookup(t *testing.T) {
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{deadAddr(t)}, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithTimeout(100 * time.Millisecond), redislimit.WithBreaker(1, time.Minute)}
	batched := newLimiter(t, client, faultConfig, append(opts, redislimit.WithPrefix("all:"))...)
	single := newLimiter(t, client, faultConfig, append(opts, redislimit.WithPrefix("one:"))...)
	for _, l := range []*redislimit.Limiter{batched, single} {
		_, err := l.TakeContext(context.Background(), "k", 1)
		require.Error(t, err)
		_, err = l.TakeContext(context.Background(), "k", 1)
		require.ErrorIs(t, err, redislimit.ErrBreakerOpen, "one failed lookup opened the breaker")
	}
	breakerNow.Add(int64(2 * time.Minute)) // the cooldown is over: the next call probes
	r := hotlimit.Receipt{N: 2, At: int64(time.Hour)}

	takes := []redislimit.Take{{Limiter: batched, Key: "k", N: 1, GiveBack: r}}
	redislimit.TakeAll(context.Background(), takes)
	backErr := single.RefundContext(context.Background(), "k", r)
	d, _, err := single.TakeReceiptContext(context.Background(), "k", 1)

	require.Error(t, backErr)
	require.NotErrorIs(t, backErr, redislimit.ErrBreakerOpen, "the twin's give-back probed")
	require.ErrorIs(t, err, redislimit.ErrBreakerOpen, "the twin's take found the breaker open again")
	require.Error(t, takes[0].GiveBackErr)
	assert.NotErrorIs(t, takes[0].GiveBackErr, redislimit.ErrBreakerOpen, "the give-back probed the lookup")
	assert.ErrorIs(t, takes[0].Err, redislimit.ErrBreakerOpen, "the take found the breaker open again")
	assert.Equal(t, d, takes[0].Decision)
}
