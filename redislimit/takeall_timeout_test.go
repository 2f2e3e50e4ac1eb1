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
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// afterPipeline is a go-redis hook that calls then once, after the first
// pipeline of scripts the client ran (not one that sets up a connection)
// has returned.
type afterPipeline struct {
	then func()
	once chan struct{}
}

func (h *afterPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *afterPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *afterPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if scripts(cmds) {
			select {
			case <-h.once:
			default:
				close(h.once)
				h.then()
			}
		}
		return err
	}
}

// TestTakeAllTakesUnderTheirOwnTimeouts: a TakeAll of takes under two
// limiters of one client with different timeouts (50 ms and 10 s) bounds
// each take by its own limiter's: the first limiter's takes go in the
// pipeline, the other's by itself after it. Redis (SIGSTOP) is frozen
// while the short limiter's take waits, and answers while the long one's
// does: the short take fails by its timeout, with the failure policy's
// decision, and the long one is decided by Redis, whichever comes first in
// the TakeAll. Sent in one pipeline, both takes would share the first
// limiter's timeout: the long take would fail by the short timeout, or the
// short one wait out the long timeout until Redis answered it.
func TestTakeAllTakesUnderTheirOwnTimeouts(t *testing.T) {
	for _, shortFirst := range []bool{true, false} {
		name := map[bool]string{true: "short first", false: "long first"}[shortFirst]
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1, ReadTimeout: exactTimeout})
			t.Cleanup(func() { _ = client.Close() })
			opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(0, 0)}
			short := newLimiter(t, client, faultConfig, append(opts, redislimit.WithTimeout(50*time.Millisecond), redislimit.WithPrefix("short:"))...)
			long := newExact(t, client, faultConfig, append(opts, redislimit.WithPrefix("long:"))...)
			take(t, long, "warm", 0) // connected, and the script loaded
			t.Cleanup(srv.Resume)

			takes := []redislimit.Take{{Limiter: short, Key: "k", N: 1}, {Limiter: long, Key: "k", N: 1}}
			hook := &afterPipeline{once: make(chan struct{})}
			if shortFirst {
				// Frozen for the short take's pipeline, back for the long
				// take sent after it.
				srv.Pause()
				hook.then = srv.Resume
			} else {
				// Back for the long take's pipeline, frozen for the short
				// take sent after it.
				takes[0], takes[1] = takes[1], takes[0]
				hook.then = srv.Pause
			}
			client.AddHook(hook)
			redislimit.TakeAll(context.Background(), takes)

			for _, tk := range takes {
				if tk.Limiter == short {
					require.Error(t, tk.Err, "the short take, while Redis is frozen")
					assert.Equal(t, "timeout", redislimit.Reason(tk.Err), "the short take: %v", tk.Err)
					assert.False(t, tk.Decision.Allowed, "the short take: FailClosed")
					continue
				}
				require.NoError(t, tk.Err, "the long take, which Redis answered within its timeout")
				assert.True(t, tk.Decision.Allowed, "the long take")
				assert.Equal(t, faultLimit-1, tk.Decision.Remaining, "the long take: decided by Redis")
			}
			select {
			case <-hook.once:
			default:
				t.Fatal("no pipeline of scripts was sent")
			}
		})
	}
}
