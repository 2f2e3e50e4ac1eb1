package redislimit_test

import (
	"context"
	"fmt"
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

// holdGiveBack is a go-redis hook that holds every give-back sent by itself
// (a script call whose ARGV 8 is positive) until release is closed or its
// context ends, as a slow Redis would; held is closed when the first is.
type holdGiveBack struct {
	held, release chan struct{}
	once          atomic.Bool
}

func (h *holdGiveBack) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdGiveBack) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 11 && fmt.Sprint(args[11]) != "0" {
			if h.once.CompareAndSwap(false, true) {
				close(h.held)
			}
			select {
			case <-h.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *holdGiveBack) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeaseReplacedKeepsCallerDeadline: a take that gets a key's next
// lease while the previous one, live but short of the take, still holds
// requests has its
// decision as soon as Redis answers it: the give-back of the previous
// lease's leftovers does not hold the caller past its context's deadline,
// Redis being slow to take it. The leftovers still go back to Redis, and
// Close waits for them. The caller's deadline is as long as the limiter's
// timeout, so that a loaded machine's delays cannot end the take; a take
// that waits for the held give-back is caught after half of it.
func TestLeaseReplacedKeepsCallerDeadline(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clocked := hotlimit.WithClock(now.Load)
	client := newClient(t, srv)
	const ttl = time.Second
	leased := newExact(t, client, c, clocked, redislimit.WithLease(10, ttl), redislimit.WithBatch(0, 0))
	other := newExact(t, newClient(t, srv), c, clocked)

	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 10 leased")
	require.True(t, take(t, leased, "k", 1).Allowed, "from the lease: 9 left")
	assert.Equal(t, c.Limit-11, take(t, other, "k", 0).Remaining)
	h := &holdGiveBack{held: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(h)

	type result struct {
		d   hotlimit.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), exactTimeout)
		defer cancel()
		d, err := leased.TakeContext(ctx, "k", 10) // more than the lease's 9
		done <- result{d, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(exactTimeout / 2):
		close(h.release)
		r = <-done
		t.Errorf("the take waited for the previous lease's give-back")
	}
	require.NoError(t, r.err, "Redis decided")
	assert.True(t, r.d.Allowed)
	await(t, h.held, "the previous lease's give-back")
	select {
	case <-h.release:
	default:
		close(h.release)
	}
	require.NoError(t, leased.Close(), "Close gives back the new lease, after the previous one's give-back")
	// Redis counts 1 taken and 10 leased, 10 taken and 10 leased again, the
	// first lease's 9 unspent given back, and the second's 10 at Close.
	assert.Equal(t, c.Limit-12, take(t, other, "k", 0).Remaining, "every leftover went back to Redis")
}

// TestFixedWindowLeaseEndsWithItsWindow: a fixed window's lease is not
// spent past the end of the window Redis counted it in, however long its
// ttl: in the next window, the instances between them admit exactly the
// limit, the leased limiter asking Redis for its first request there (and a
// new lease), not spending the old one's leftovers on top.
func TestFixedWindowLeaseEndsWithItsWindow(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}
	var now atomic.Int64
	now.Store(int64(10*time.Second + 900*time.Millisecond)) // 100 ms before window 11
	clocked := hotlimit.WithClock(now.Load)
	leased := newExact(t, newClient(t, srv), c, clocked, redislimit.WithLease(5, time.Hour))
	other := newExact(t, newClient(t, srv), c, clocked)

	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
	now.Store(int64(11*time.Second) - 1)
	d := take(t, leased, "k", 1)
	require.True(t, d.Allowed, "from the lease, in its window")
	require.Equal(t, 4, d.Remaining, "what the lease has left")

	now.Store(int64(11 * time.Second)) // window 11: the lease's window is over
	passed := 0
	for range 2 * c.Limit {
		if take(t, leased, "k", 1).Allowed {
			passed++
		}
		if take(t, other, "k", 1).Allowed {
			passed++
		}
	}
	assert.Equal(t, c.Limit, passed, "window 11 admits exactly its limit")
	redislimit.WaitRetired(leased)
	assert.Zero(t, take(t, other, "k", 0).Remaining, "the old lease's leftovers count in no window")
}

// TestLeaseReplacementsDoNotPileUp: while the give-back of a replaced
// lease is under way, the instance takes no further lease for the key, so
// that it holds at most twice the lease size out of the other instances'
// reach, as WithLease says, however slow Redis is to take the give-back:
// the calls that the live lease does not cover meanwhile take their own
// requests only.
func TestLeaseReplacementsDoNotPileUp(t *testing.T) {
	srv := redistest.Start(t)
	const size = 10
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clocked := hotlimit.WithClock(now.Load)
	client := newClient(t, srv)
	leased := newExact(t, client, c, clocked, redislimit.WithLease(size, time.Hour), redislimit.WithBatch(0, 0))
	other := newExact(t, newClient(t, srv), c, clocked)
	h := &holdGiveBack{held: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(h)
	released := false
	release := func() {
		if !released {
			released = true
			close(h.release)
		}
	}
	t.Cleanup(release)

	admitted := 0
	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, a lease of 10")
	admitted++
	for i := range 3 {
		// more than the lease holds: Redis decides, and may lease anew,
		// replacing the lease whose give-back Redis holds
		require.True(t, take(t, leased, "k", size+1).Allowed, "take %d of %d", i, size+1)
		admitted += size + 1
	}
	await(t, h.held, "a replaced lease's give-back")
	assert.GreaterOrEqual(t, take(t, other, "k", 0).Remaining, c.Limit-admitted-2*size,
		"the instance holds at most twice the lease size beyond what passed")
	release()
	redislimit.WaitRetired(leased)
	assert.Equal(t, c.Limit-admitted-int(redislimit.LeaseLeft(leased, "k")), take(t, other, "k", 0).Remaining,
		"once the give-back is done, Redis counts what passed and the live lease")
}
