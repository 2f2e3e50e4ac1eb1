package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
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
	"github.com/hotlimit/hotlimit/service"
)

// abandonHook forces the interleaving of a caller that leaves while its
// call is in a batch: a command sent by itself on the key held is held
// until release is closed, so that it keeps a call in flight and the next
// calls join a batch; a pipeline of scripts is run by Redis, and then,
// before its answers are handed out, cancel is called and the hook waits
// for left, which the test closes once the caller has returned. The
// pipeline go-redis sends to set up a new connection (HELLO, CLIENT
// SETINFO), which runs inside the batch's before the batch is sent, is
// let through: cancelling there would have the caller leave before Redis
// ran its call.
type abandonHook struct {
	held    string // the Redis key whose lone command is held
	release chan struct{}
	holding chan struct{} // closed once the lone command is held

	mu      sync.Mutex
	cancel  context.CancelFunc // nil once called
	left    chan struct{}
	pipes   int // pipelines that met the cancellation
	holdOne sync.Once
}

// holdFlusher keeps lim's batch flusher busy: it starts a call on the key
// "held", whose command the returned abandonHook holds until its release is
// closed, and returns once that call is in flight, so that the calls made
// next wait in a batch of their own. cancel, when not nil, is what the hook
// calls once Redis has run the next pipeline of scripts (see abandonHook);
// the inner hooks are added inside it. The held call's decision arrives on
// the channel once the hook releases it.
func holdFlusher(t *testing.T, client *redis.Client, lim *redislimit.Limiter, cancel context.CancelFunc, inner ...redis.Hook) (*abandonHook, <-chan hotlimit.Decision) {
	t.Helper()
	h := &abandonHook{held: lim.RedisKey("held"), release: make(chan struct{}), holding: make(chan struct{}),
		cancel: cancel, left: make(chan struct{})}
	client.AddHook(h)
	for _, hook := range inner {
		client.AddHook(hook)
	}
	held := make(chan hotlimit.Decision, 1)
	go func() {
		d, _ := lim.TakeContext(context.Background(), "held", 1)
		held <- d
	}()
	<-h.holding
	return h, held
}

func (h *abandonHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *abandonHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 3 && args[3] == h.held {
			h.holdOne.Do(func() { close(h.holding) })
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *abandonHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !scripts(cmds) {
			return err
		}
		h.mu.Lock()
		cancel := h.cancel
		h.cancel = nil
		if cancel != nil {
			h.pipes++
		}
		h.mu.Unlock()
		if cancel != nil {
			cancel()
			<-h.left
		}
		return err
	}
}

// TestCanceledInBatchCountsNothing: a caller whose context ends while its
// call is in a batch that Redis runs gets the failure policy's decision, so
// Redis must keep nothing of it. The test holds one call in flight, sends
// the next in a batch, lets Redis run the batch, cancels the caller and
// waits until it has returned before the batch's answers are handed out.
// Under FailClosed the caller is denied and, after the batch, the key it
// took from in Redis is as full as before (read back with n = 0), for a
// Take and for a TakeAll of two limiters; under FailOpen the caller is
// admitted, as FailOpen admits, counting nothing in Redis either. The call
// held meanwhile is counted as its caller was told.
func TestCanceledInBatchCountsNothing(t *testing.T) {
	for _, kind := range []string{"Take", "TakeAll"} {
		for _, p := range []redislimit.FailPolicy{redislimit.FailClosed, redislimit.FailOpen} {
			t.Run(fmt.Sprintf("%s/%v", kind, p), func(t *testing.T) {
				srv := redistest.Start(t)
				client := newClient(t, srv)
				c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
				c2 := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute}
				opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(p), redislimit.WithBatch(64, 1), redislimit.WithBreaker(0, 0)}
				lim := newExact(t, client, c, opts...)
				lim2 := newExact(t, client, c2, opts...)
				// Load the scripts first, so that the batch runs them at once.
				take(t, lim, "warm", 0)
				take(t, lim2, "warm", 0)

				ctx, cancel := context.WithCancel(context.Background())
				piped := pipeSignal{done: make(chan struct{}, 2)}
				h, heldDone := holdFlusher(t, client, lim, cancel, piped)
				require.EqualValues(t, 1, redislimit.InFlight(lim), "the held call is in flight")

				var admitted []bool
				var errs []error
				if kind == "Take" {
					d, err := lim.TakeContext(ctx, "k", 2)
					admitted, errs = []bool{d.Allowed}, []error{err}
				} else {
					takes := []redislimit.Take{{Limiter: lim, Key: "k", N: 2}, {Limiter: lim2, Key: "k", N: 3}}
					redislimit.TakeAll(ctx, takes)
					for _, tk := range takes {
						admitted, errs = append(admitted, tk.Decision.Allowed), append(errs, tk.Err)
					}
				}
				close(h.left)
				h.mu.Lock()
				pipes := h.pipes
				h.mu.Unlock()
				require.Equal(t, 1, pipes, "the caller's batch was run by Redis and then the caller left")
				for i := range errs {
					require.ErrorIs(t, errs[i], context.Canceled, "take %d: the caller left", i)
					assert.Equal(t, p == redislimit.FailOpen, admitted[i], "take %d: the policy decided", i)
				}

				close(h.release)
				assert.True(t, (<-heldDone).Allowed, "the held call")
				assert.Equal(t, c.Limit-1, take(t, lim, "held", 0).Remaining, "the held call counts once")
				// The batch's flusher gives back what the caller left, in
				// one more pipeline.
				await(t, piped.done, "the batch")
				await(t, piped.done, "the give-back")
				want := []int{c.Limit, c2.Limit}[:len(errs)]
				lims := []*redislimit.Limiter{lim, lim2}[:len(errs)]
				var got []int
				for _, l := range lims {
					got = append(got, take(t, l, "k", 0).Remaining)
				}
				assert.Equal(t, want, got, "what each key has left in Redis: nothing of the caller who left")
			})
		}
	}
}

// TestCanceledHammerConserves: while one call is held in flight, so that
// every other call goes in a batch, 8 goroutines take from one key, by
// Take and by TakeAll, each call under a context cancelled at a random
// point (before the call, during it, or never). Whatever the interleaving,
// the key's count in Redis afterwards is exactly what the callers were told
// Redis admitted: a caller that left took nothing.
func TestCanceledHammerConserves(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100000, Window: time.Second}
	lim := newExact(t, client, c, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBatch(8, 2), redislimit.WithBreaker(0, 0))
	take(t, lim, "warm", 0)
	h, heldDone := holdFlusher(t, client, lim, nil)

	workers, calls := 8, 200
	if testing.Short() {
		calls = 50
	}
	var mu sync.Mutex
	redisAdmitted, left := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range calls {
				ctx, cancel := context.WithCancel(context.Background())
				switch k := r.IntN(4); k {
				case 0:
					cancel()
				case 1:
					time.AfterFunc(time.Duration(r.IntN(500))*time.Microsecond, cancel)
				}
				n := 1 + i%3
				var admitted, gone int
				if i%2 == 0 {
					d, err := lim.TakeContext(ctx, "k", n)
					switch {
					case err != nil:
						gone++
					case d.Allowed:
						admitted += n
					}
				} else {
					takes := []redislimit.Take{{Limiter: lim, Key: "k", N: n}, {Limiter: lim, Key: "k", N: 1}}
					redislimit.TakeAll(ctx, takes)
					for _, tk := range takes {
						switch {
						case tk.Err != nil:
							gone++
						case tk.Decision.Allowed:
							admitted += tk.N
						}
					}
				}
				cancel()
				mu.Lock()
				redisAdmitted, left = redisAdmitted+admitted, left+gone
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Positive(t, redisAdmitted, "some calls were decided by Redis")
	require.Positive(t, left, "some callers left")
	close(h.release)
	<-heldDone
	var got int
	require.Eventually(t, func() bool {
		got = c.Limit - take(t, lim, "k", 0).Remaining
		return got == redisAdmitted
	}, 5*time.Second, 10*time.Millisecond, "Redis counts exactly what it admitted")
	assert.Equal(t, redisAdmitted, got)
	t.Logf("%d requests admitted by Redis, %d takes whose callers left", redisAdmitted, left)
}

// TestServiceRuleCanceledMidBatch: a service rule of two limits on Redis,
// whose request's context ends while its limits' calls, asked together, are
// in a batch that Redis runs (the first limit's, busy with another call):
// the request is denied (FailClosed), and the batch gives both limits
// back, so that both keys are as full as before.
func TestServiceRuleCanceledMidBatch(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	first := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
	second := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute}
	f := newMixedFactory(redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBatch(64, 1), redislimit.WithBreaker(0, 0), redislimit.WithTimeout(exactTimeout)))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{first, second}}, frozenClock(), hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	limA, limB := f.onRedis[first], f.onRedis[second]
	require.NotNil(t, limA)
	require.NotNil(t, limB)
	take(t, limA, "warm", 0)
	take(t, limB, "warm", 0)

	ctx, cancel := context.WithCancel(context.Background())
	piped := pipeSignal{done: make(chan struct{}, 2)}
	h, heldDone := holdFlusher(t, client, limA, cancel, piped)

	d, err := svc.TakeContext(ctx, "u", "a", 2)
	close(h.left)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, d.Allowed, "FailClosed denied the request")
	close(h.release)
	<-heldDone
	await(t, piped.done, "the batch")
	await(t, piped.done, "the give-back")
	key := "1:u|a"
	assert.Equal(t, first.Limit, take(t, limA, key, 0).Remaining, "the batch gave the first limit back")
	assert.Equal(t, second.Limit, take(t, limB, key, 0).Remaining, "and the second")
}

// scripts reports whether cmds is a pipeline of script calls, not one
// that sets up a connection.
func scripts(cmds []redis.Cmder) bool {
	return len(cmds) > 0 && cmds[0].Name() == "evalsha"
}

// await receives from ch, failing the test rather than hanging when
// nothing comes: what was awaited did not happen.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(exactTimeout):
		t.Fatalf("%s did not happen", what)
	}
}

// pipeSignal is a go-redis hook that sends on done after every pipeline
// of scripts the client ran (not those that set up a connection), so that a test knows when a batch's give-back is over.
type pipeSignal struct{ done chan struct{} }

func (h pipeSignal) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipeSignal) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h pipeSignal) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if scripts(cmds) {
			h.done <- struct{}{}
		}
		return err
	}
}

// TestCanceledInBatchGivesBackWhatStillCounts: with an injected clock, the
// give-back of a caller that left a batch is judged at the time it is made,
// not at the time of the take. A caller takes 5 of 10 at t0 in a batch and
// leaves; at t0 + 5s, with 5 refilled, another instance takes the 10 that
// a key without the caller's take holds then; only then is the give-back
// made. Had the caller taken nothing, the key would have been full at t0 +
// 5s all the same (its refill capped), so nothing is given back, and the
// key is as empty as the sequential model without the caller's take says.
// A give-back judged at t0 refilled nothing since and handed 5 back: 5
// requests past the limit.
func TestCanceledInBatchGivesBackWhatStillCounts(t *testing.T) {
	srv := redistest.Start(t)
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: 10 * time.Second}
			var now atomic.Int64
			now.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(now.Load)
			client := newClient(t, srv)
			prefix := redislimit.WithPrefix("stale:")
			lim := newExact(t, client, c, clocked, prefix, redislimit.WithBatch(64, 1), redislimit.WithBreaker(0, 0))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)
			require.Equal(t, lim.RedisKey("k"), other.RedisKey("k"), "one key in Redis")
			take(t, lim, "warm", 0) // loads the script: the batch runs it at once

			ctx, cancel := context.WithCancel(context.Background())
			piped := pipeSignal{done: make(chan struct{}, 2)}
			h, heldDone := holdFlusher(t, client, lim, cancel, piped)

			t0 := now.Load()
			_, err := lim.TakeContext(ctx, "k", 5)
			require.ErrorIs(t, err, context.Canceled, "the caller left after Redis ran its batch")
			<-piped.done // the batch, run by Redis before the caller left

			now.Add(int64(5 * time.Second))
			m := newModel(c)
			want := m.Take("k", 10, now.Load()-t0)
			require.True(t, want.Allowed, "without the caller's take, the key holds 10 at t0 + 5s")
			got := take(t, other, "k", 10)
			require.True(t, got.Allowed, "5 left and 5 refilled")
			close(h.left)
			<-piped.done // the give-back
			close(h.release)
			<-heldDone

			assert.Equal(t, m.Take("k", 0, now.Load()-t0).Remaining, take(t, other, "k", 0).Remaining,
				"what the key has left after the give-back")
			assert.False(t, other.Allow("k"), "the key is drained: nothing passes past the limit")
		})
	}
}

// TestCanceledTakeAllGivesBackByEachClock: a TakeAll whose takes join one
// batch may mix limiters of different clocks: the first reads Redis's
// TIME, the second an injected clock. When the caller leaves after Redis
// ran the batch, each give-back is judged by its own limiter's clock, so
// both keys are as full as before, read back with n = 0.
func TestCanceledTakeAllGivesBackByEachClock(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ca := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
	cb := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute}
	opts := []hotlimit.Option{redislimit.WithBatch(64, 1), redislimit.WithBreaker(0, 0), redislimit.WithPrefix("clocks:")}
	redisTime := newExact(t, client, ca, opts...)
	injected := newExact(t, client, cb, append([]hotlimit.Option{frozenClock()}, opts...)...)
	take(t, redisTime, "warm", 0)
	take(t, injected, "warm", 0)

	ctx, cancel := context.WithCancel(context.Background())
	piped := pipeSignal{done: make(chan struct{}, 2)}
	h, heldDone := holdFlusher(t, client, redisTime, cancel, piped)

	takes := []redislimit.Take{{Limiter: redisTime, Key: "k", N: 2}, {Limiter: injected, Key: "k", N: 3}}
	redislimit.TakeAll(ctx, takes)
	for i, tk := range takes {
		require.ErrorIs(t, tk.Err, context.Canceled, "take %d: the caller left", i)
	}
	<-piped.done // the batch
	close(h.left)
	<-piped.done // the give-backs
	close(h.release)
	<-heldDone
	assert.Equal(t, ca.Limit, take(t, redisTime, "k", 0).Remaining, "the key of Redis's clock is full")
	assert.Equal(t, cb.Limit, take(t, injected, "k", 0).Remaining, "the key of the injected clock is full")
}

// TestCanceledRefundMayStillCount: a refund whose caller leaves after Redis
// ran its batch returns the caller's error, and yet the requests are back,
// as RefundContext's doc warns: a give-back is not taken back, so such an
// error does not mean that nothing was given back.
func TestCanceledRefundMayStillCount(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
	lim := newExact(t, client, c, frozenClock(), redislimit.WithBatch(64, 1), redislimit.WithBreaker(0, 0))
	d, r := lim.TakeReceipt("k", 3)
	require.True(t, d.Allowed)

	ctx, cancel := context.WithCancel(context.Background())
	piped := pipeSignal{done: make(chan struct{}, 2)}
	h, heldDone := holdFlusher(t, client, lim, cancel, piped)

	require.ErrorIs(t, lim.RefundContext(ctx, "k", r), context.Canceled, "the caller left the refund's batch")
	<-piped.done // the refund's batch, run by Redis before the caller left
	close(h.left)
	close(h.release)
	<-heldDone
	assert.Equal(t, c.Limit, take(t, lim, "k", 0).Remaining, "the refund was made all the same")
}

// holdPipe is a go-redis hook that holds the first pipeline of scripts
// until release is closed (holding is closed once it is held), and records
// the key of every script call the client sends in a pipeline.
type holdPipe struct {
	holding, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	keys             []string
}

func (h *holdPipe) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *holdPipe) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *holdPipe) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !scripts(cmds) {
			return next(ctx, cmds)
		}
		h.mu.Lock()
		for _, c := range cmds {
			h.keys = append(h.keys, fmt.Sprint(c.Args()[3]))
		}
		h.mu.Unlock()
		h.once.Do(func() {
			close(h.holding)
			<-h.release
		})
		return next(ctx, cmds)
	}
}

// TestLeftBeforeSentIsNotSent: a call whose caller leaves while it waits in
// the batcher's queue, its flusher busy with an earlier batch, is never
// sent to Redis: no script call names its key, and Redis holds no key for
// it. The call after it is sent and answered.
func TestLeftBeforeSentIsNotSent(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
	lim := newExact(t, client, c, frozenClock(), redislimit.WithBatch(64, 1), redislimit.WithBreaker(0, 0))
	take(t, lim, "warm", 0)
	p := &holdPipe{holding: make(chan struct{}), release: make(chan struct{})}
	h, heldDone := holdFlusher(t, client, lim, nil, p)

	first := make(chan hotlimit.Decision)
	go func() { first <- take(t, lim, "first", 1) }()
	<-p.holding // the flusher is busy with the batch of "first"

	ctx, cancel := context.WithCancel(context.Background())
	leftDone := make(chan error)
	go func() {
		_, err := lim.TakeContext(ctx, "left", 1)
		leftDone <- err
	}()
	for redislimit.Queued(lim) == 0 { // the call of "left" waits in the queue
		runtime.Gosched()
	}
	cancel()
	require.ErrorIs(t, <-leftDone, context.Canceled, "the caller left")

	close(p.release)
	require.True(t, (<-first).Allowed)
	require.True(t, take(t, lim, "after", 1).Allowed, "the next batch, which the flusher sends after it met the call left")
	close(h.release)
	<-heldDone

	p.mu.Lock()
	keys := slices.Clone(p.keys)
	p.mu.Unlock()
	assert.Contains(t, keys, lim.RedisKey("after"), "the call after it went in a batch")
	assert.NotContains(t, keys, lim.RedisKey("left"), "the call left was not sent")
	assert.Zero(t, srv.Client().Exists(context.Background(), lim.RedisKey("left")).Val(), "Redis has no key for it")
}
