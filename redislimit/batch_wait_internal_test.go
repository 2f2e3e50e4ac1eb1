package redislimit

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// waitsForAnswer reports whether returned is closed, or a goroutine waits
// in batcher.wait for its call's answer, which it receives there only
// once it could not leave.
func waitsForAnswer(returned chan struct{}) bool {
	select {
	case <-returned:
		return true
	default:
	}
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[chan receive") && strings.Contains(g, ").wait(") {
			return true
		}
	}
	return false
}

// TestWaitReportsWhatRedisCounted: the goroutine that ran a batch and the
// caller whose context ends meanwhile settle each call between them, and
// Redis keeps a take exactly when its caller is told of Redis's decision.
// Redis has run the call's take (counted it) in both cases. When the batch's
// goroutine claims the call first, and the caller's context ends before the
// answer is handed over, the caller cannot leave: wait returns nil once the
// answer comes, and the caller reads Redis's decision, which Redis counted.
// When the caller leaves first, wait returns its context's error (the
// failure policy decides), and the batch's answer gives back what the
// take counted. (answer claims the call and hands the answer over in two
// steps, which the test takes apart to end the context between them.)
func TestWaitReportsWhatRedisCounted(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	const limit = 5
	l, err := New(client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Minute},
		hotlimit.WithClock(func() int64 { return int64(time.Hour) }), WithTimeout(10*time.Second), WithBreaker(0, 0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	b := newBatcher(l, 8, 0) // no flusher: the test runs the batches
	t.Cleanup(b.close)

	// send hands a call taking 1 from key to b under ctx, runs its batch,
	// in which Redis counts the take, and returns the call and where its
	// caller's error arrives once wait returned (returned is then closed).
	send := func(t *testing.T, ctx context.Context, key string) (c *call, errc chan error, returned chan struct{}) {
		args, err := l.args(1, 0, 0, 0)
		require.NoError(t, err)
		c = newCall()
		c.ops = append(c.ops, op{script: l.script, key: l.redisKey(key), args: args, clock: l.clock})
		errc, returned = make(chan error, 1), make(chan struct{})
		go func() {
			errc <- b.wait(ctx, c)
			close(returned)
		}()
		require.Same(t, c, <-b.calls, "the call handed over")
		b.pipeline(context.Background(), context.Background(), []*call{c}, nil)
		require.NoError(t, c.ops[0].err, "Redis ran the take")
		require.True(t, c.ops[0].rep.allowed)
		return c, errc, returned
	}
	remaining := func(t *testing.T, key string) int {
		d, err := l.TakeContext(context.Background(), key, 0)
		require.NoError(t, err)
		return d.Remaining
	}

	t.Run("answered as the caller leaves", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, errc, returned := send(t, ctx, "answered")
		require.True(t, c.state.CompareAndSwap(pending, answered), "the batch's goroutine claims the call, as answer does first")
		cancel()
		for !waitsForAnswer(returned) {
			runtime.Gosched()
		}
		c.done <- struct{}{} // and hands the answer over, as answer does next
		require.NoError(t, <-errc, "the caller could not leave a call already answered: it reads the answer")
		assert.True(t, c.ops[0].rep.allowed, "Redis's decision")
		assert.EqualValues(t, limit-1, c.ops[0].rep.remaining, "Redis's decision")
		c.free()
		assert.Equal(t, limit-1, remaining(t, "answered"), "Redis keeps the take its caller was told of")
	})

	t.Run("left before the answer", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c, errc, _ := send(t, ctx, "left")
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled, "the caller left: the failure policy decides")
		b.answer(c) // finds the caller gone, and gives the take back
		assert.Equal(t, limit, remaining(t, "left"), "Redis keeps nothing of the take its caller left")
	})
}
