package redislimit_test

import (
	"context"
	"fmt"
	"sync"
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

// keyHold is a go-redis hook that holds every script call on the Redis key
// key, sent by itself or in a pipeline, until release is closed, telling
// entered as each one arrives (a buffered channel: the hook does not wait
// for the test to hear of it), and notes whether one came in a pipeline.
type keyHold struct {
	key     string
	entered chan struct{}
	release chan struct{}
	piped   atomic.Bool
}

func (h *keyHold) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *keyHold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.holds(cmd) {
			h.entered <- struct{}{}
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *keyHold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.holds(cmd) {
				h.piped.Store(true)
				h.entered <- struct{}{}
				<-h.release
				break
			}
		}
		return next(ctx, cmds)
	}
}

func (h *keyHold) holds(cmd redis.Cmder) bool {
	args := cmd.Args()
	return (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(args) > 3 && fmt.Sprint(args[3]) == h.key
}

// TestClusterProbeOfAFrozenMasterGoesAlone: once the breaker of a frozen
// master (SIGSTOP) has cooled down, the take that probes it goes to Redis
// by itself, never in a batch shared with other calls, whether a Take or a
// take of a TakeAll makes it: a probe of a master that does not answer
// would hold the whole batch, the live master's calls in it included,
// until the timeout. With calls under way, so that the next ones share a
// batch, the probing call (a Take of the frozen master's key, or a TakeAll
// of a live key and of that key) and a Take of another live key are sent
// together; the probe is held as long as the test likes (the master does
// not answer it), and meanwhile the live Take is answered by Redis. Then
// the master comes back, the probe is let through, Redis answers it, and
// the breaker is closed.
func TestClusterProbeOfAFrozenMasterGoesAlone(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	masters := cl.Masters()
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	// The timeout ends the call that opens the breaker; every other call
	// is answered well within it, or held by the test for less.
	const timeout, cooldown = 2 * time.Second, time.Minute
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}

	for _, kind := range []string{"Take", "TakeAll"} {
		t.Run(kind, func(t *testing.T) {
			client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			prefix := redislimit.WithPrefix(kind + ":")
			lim := newLimiter(t, client, c, frozenClock(), prefix, redislimit.WithFailPolicy(redislimit.FailClosed),
				redislimit.WithBreaker(1, cooldown), redislimit.WithBatch(64, 1), redislimit.WithTimeout(timeout))
			dead := keysOn(t, cl, masters[0], "dead-", 1)[0]
			live := keysOn(t, cl, masters[1], "live-", 4)
			warm := newExact(t, client, c, frozenClock(), prefix)
			for _, key := range append([]string{dead}, live...) {
				take(t, warm, key, 0) // the scripts, the slot map and the connections
			}

			masters[0].Pause()
			t.Cleanup(masters[0].Resume)
			r := call(lim, dead, 1)
			require.Error(t, r.err, "the frozen master's key")
			require.NotErrorIs(t, r.err, redislimit.ErrBreakerOpen)
			require.ErrorIs(t, call(lim, dead, 1).err, redislimit.ErrBreakerOpen, "its breaker is open")
			breakerNow.Add(int64(cooldown)) // the next call on its key probes it

			busy := &heldPipelines{entered: make(chan struct{}), release: make(chan struct{})}
			busy.hold.Store(2)
			probe := &keyHold{key: lim.RedisKey(dead), entered: make(chan struct{}, 1), release: make(chan struct{})}
			client.AddHook(busy)
			client.AddHook(probe)
			var wg sync.WaitGroup
			t.Cleanup(wg.Wait) // after the releases below, before the limiter's Close
			var releaseBusy, releaseProbe sync.Once
			t.Cleanup(func() {
				releaseBusy.Do(func() { close(busy.release) })
				releaseProbe.Do(func() { close(probe.release) })
			})
			wg.Go(func() { _, _ = lim.TakeContext(context.Background(), live[0], 1) }) // by itself, held
			<-busy.entered
			wg.Go(func() { _, _ = lim.TakeContext(context.Background(), live[1], 1) }) // the flusher's batch, held
			<-busy.entered

			var probed []redislimit.Take // of the probe's call: the probe, and a live take with it
			probeDone := make(chan struct{})
			wg.Go(func() {
				defer close(probeDone)
				if kind == "Take" {
					probed = []redislimit.Take{{Limiter: lim, Key: dead, N: 1}}
					probed[0].Decision, probed[0].Err = lim.TakeContext(context.Background(), dead, 1)
					return
				}
				probed = []redislimit.Take{{Limiter: lim, Key: live[2], N: 1}, {Limiter: lim, Key: dead, N: 1}}
				redislimit.TakeAll(context.Background(), probed)
			})
			liveDone := make(chan result, 1)
			wg.Go(func() { liveDone <- call(lim, live[3], 1) })
			// The calls queue for the flusher: the live Take's, and the
			// TakeAll's, or a probe's that joined the batch; a Take's probe
			// is held by itself instead.
			require.Eventually(t, func() bool {
				q := redislimit.Queued(lim)
				return q == 2 || q == 1 && kind == "Take" && len(probe.entered) == 1
			}, 10*time.Second, time.Millisecond, "the calls did not queue")
			releaseBusy.Do(func() { close(busy.release) })

			select {
			case r := <-liveDone:
				assert.NoError(t, r.err, "the live Take, sent while the probe was held")
				assert.True(t, r.d.Allowed, "the live Take")
			case <-time.After(10 * time.Second):
				require.FailNow(t, "the live Take waited for the probe of the frozen master")
			}
			<-probe.entered // the probe is sent
			select {
			case <-probeDone:
				require.FailNow(t, "the probe's call ended while the probe was held")
			default:
			}
			masters[0].Resume()
			releaseProbe.Do(func() { close(probe.release) })
			<-probeDone
			assert.False(t, probe.piped.Load(), "the probe went in a pipeline")
			for _, tk := range probed {
				assert.NoError(t, tk.Err, "%s: Redis answered", tk.Key)
				assert.True(t, tk.Decision.Allowed, "%s", tk.Key)
			}
			r = call(lim, dead, 1)
			assert.NoError(t, r.err, "the probe closed the breaker")
			assert.True(t, r.d.Allowed)
		})
	}
}
