package redislimit_test

import (
	"context"
	"errors"
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

// roundTrips counts a client's commands sent by themselves and its
// pipelines, with the commands they held.
type roundTrips struct {
	singles, pipelines, piped atomic.Int64
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.singles.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.pipelines.Add(1)
		r.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestTakeAllMatchesTakes: TakeAll of takes under limiters of every
// algorithm decides exactly what TakeReceiptContext decides for the same
// takes in turn on twin limiters (another prefix, the same frozen clock),
// receipts included, and sends them all in one pipeline.
func TestTakeAllMatchesTakes(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips roundTrips
	client.AddHook(&trips)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	var batched, single []*redislimit.Limiter
	for i, a := range algorithms {
		c := hotlimit.Config{Algorithm: a, Limit: 3 + i, Window: time.Minute}
		batched = append(batched, newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("all:")))
		single = append(single, newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("one:")))
	}
	keys := []string{"a", "b"}
	for step := range 12 {
		var takes []redislimit.Take
		for i := range batched {
			for _, k := range keys {
				takes = append(takes, redislimit.Take{Limiter: batched[i], Key: k, N: (step + i) % 3})
			}
		}
		pipelines, piped, singles := trips.pipelines.Load(), trips.piped.Load(), trips.singles.Load()
		redislimit.TakeAll(context.Background(), takes)
		if step > 0 { // the first one loaded the scripts
			assert.Equal(t, pipelines+1, trips.pipelines.Load(), "step %d: one pipeline", step)
			assert.Equal(t, piped+int64(len(takes)), trips.piped.Load(), "step %d: of every take", step)
			assert.Equal(t, singles, trips.singles.Load(), "step %d: and nothing else", step)
		}
		j := 0
		for i := range single {
			for _, k := range keys {
				tk := takes[j]
				j++
				require.NoError(t, tk.Err, "step %d: %v %s", step, batched[i].Config().Algorithm, k)
				d, r, err := single[i].TakeReceiptContext(context.Background(), k, tk.N)
				require.NoError(t, err)
				assert.Equal(t, d, tk.Decision, "step %d: %v %s n=%d", step, batched[i].Config().Algorithm, k, tk.N)
				assert.Equal(t, r, tk.Receipt, "step %d: %v %s n=%d", step, batched[i].Config().Algorithm, k, tk.N)
			}
		}
		clock.Add(int64(7 * time.Second))
	}
}

// TestTakeAllAlone: takes TakeAll cannot pipeline with the first are decided
// by themselves (a leased limiter, another client), and a take without a
// Limiter gets an error.
func TestTakeAllAlone(t *testing.T) {
	srv := redistest.Start(t)
	client, other := newClient(t, srv), newClient(t, srv)
	var trips roundTrips
	client.AddHook(&trips)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Hour}
	plain := newExact(t, client, c)
	leased := newExact(t, client, c, redislimit.WithLease(5, time.Minute), redislimit.WithPrefix("lease:"))
	elsewhere := newExact(t, other, c, redislimit.WithPrefix("other:"))
	takes := []redislimit.Take{{Limiter: plain, Key: "k", N: 1}, {Limiter: leased, Key: "k", N: 1}, {Limiter: elsewhere, Key: "k", N: 2}, {Key: "k", N: 1}}
	redislimit.TakeAll(context.Background(), takes)
	for i, tk := range takes[:3] {
		require.NoError(t, tk.Err, "take %d", i)
		assert.True(t, tk.Decision.Allowed, "take %d", i)
		assert.Equal(t, tk.N, tk.Receipt.N, "take %d", i)
	}
	assert.Equal(t, 1, takes[0].Decision.Remaining)
	assert.Equal(t, 0, takes[2].Decision.Remaining)
	assert.ErrorIs(t, takes[3].Err, hotlimit.ErrInvalidConfig)
	assert.False(t, takes[3].Decision.Allowed)
	assert.Equal(t, 1, take(t, plain, "k", 0).Remaining, "counted in Redis once")
}

// TestTakeAllRedisDown: with nothing listening, every take gets the error
// and its limiter's failure policy's decision.
func TestTakeAllRedisDown(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Hour}
	open := newLimiter(t, client, c, redislimit.WithFailPolicy(redislimit.FailOpen))
	closed := newLimiter(t, client, c, redislimit.WithFailPolicy(redislimit.FailClosed))
	takes := []redislimit.Take{{Limiter: open, Key: "k", N: 1}, {Limiter: closed, Key: "k", N: 1}}
	redislimit.TakeAll(context.Background(), takes)
	for i, tk := range takes {
		require.Error(t, tk.Err, "take %d", i)
		assert.False(t, errors.Is(tk.Err, hotlimit.ErrInvalidConfig), "take %d: %v", i, tk.Err)
	}
	assert.True(t, takes[0].Decision.Allowed, "FailOpen")
	assert.False(t, takes[1].Decision.Allowed, "FailClosed")
}

// heldPipelines counts a client's pipelines of scripts (not those of a new
// connection's handshake) and the commands they held, and holds the first
// hold of them, and of the scripts sent by themselves, until release is
// closed, telling entered as each one arrives.
type heldPipelines struct {
	pipelines, piped atomic.Int64
	hold             atomic.Int64
	entered          chan struct{}
	release          chan struct{}
}

func (h *heldPipelines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *heldPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" && h.hold.Add(-1) >= 0 {
			h.entered <- struct{}{}
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *heldPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || cmds[0].Name() != "evalsha" {
			return next(ctx, cmds)
		}
		h.pipelines.Add(1)
		h.piped.Add(int64(len(cmds)))
		if h.hold.Add(-1) >= 0 {
			h.entered <- struct{}{}
			<-h.release
		}
		return next(ctx, cmds)
	}
}

// TestTakeAllCoalesces: concurrent TakeAll calls of three limits each share
// pipelines. The first call goes by itself and the second to the batch's
// flusher, both held in Redis's hook until ten more calls wait for the
// flusher; those ten then go in one pipeline: three pipelines for twelve
// calls, every command sent once. And they decide as one at a time would,
// under a frozen clock: for each limit of 8, exactly 8 takes pass, with
// Remaining 7 down to 0 once each.
func TestTakeAllCoalesces(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	clock := func() int64 { return int64(time.Hour) }
	const limit, calls = 8, 12
	var lims []*redislimit.Limiter
	for _, a := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.TokenBucket, hotlimit.SlidingLog} {
		lims = append(lims, newExact(t, client, hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Minute},
			hotlimit.WithClock(clock), redislimit.WithBatch(64, 1)))
	}
	takes := func(key string) []redislimit.Take {
		var ts []redislimit.Take
		for _, l := range lims {
			ts = append(ts, redislimit.Take{Limiter: l, Key: key, N: 1})
		}
		return ts
	}
	warm := takes("warm") // loads the scripts, before the count starts
	redislimit.TakeAll(context.Background(), warm)
	for _, tk := range warm {
		require.NoError(t, tk.Err)
	}
	h := &heldPipelines{entered: make(chan struct{}), release: make(chan struct{})}
	h.hold.Store(2)
	client.AddHook(h)

	results := make([][]redislimit.Take, calls)
	var wg sync.WaitGroup
	start := func(i int) {
		wg.Go(func() {
			results[i] = takes("k")
			redislimit.TakeAll(context.Background(), results[i])
		})
	}
	start(0) // alone: its own pipeline, on its goroutine
	<-h.entered
	start(1) // another call under way: the flusher's pipeline
	<-h.entered
	for i := 2; i < calls; i++ {
		start(i)
	}
	require.Eventually(t, func() bool { return redislimit.InFlight(lims[0]) == calls }, 10*time.Second, time.Millisecond,
		"the calls did not all queue")
	close(h.release)
	wg.Wait()

	assert.Equal(t, int64(3), h.pipelines.Load(), "pipelines for %d calls", calls)
	assert.Equal(t, int64(3*calls), h.piped.Load(), "every command sent once")
	for j, l := range lims {
		var remaining []int
		for i := range calls {
			tk := results[i][j]
			require.NoError(t, tk.Err, "call %d, %v", i, l.Config().Algorithm)
			if tk.Decision.Allowed {
				remaining = append(remaining, tk.Decision.Remaining)
			}
		}
		assert.ElementsMatch(t, []int{7, 6, 5, 4, 3, 2, 1, 0}, remaining, "%v", l.Config().Algorithm)
	}
}

// TestCloseCompletesQueuedCalls: calls queued for a flusher that is busy
// (the first call held in Redis's hook by itself, the second in the
// flusher's pipeline) when Close stops the batcher are all still decided by
// Redis, none left waiting (there is no timeout to end the wait), and a
// call after Close is decided by itself: of 12 calls for a limit of 5,
// exactly 5 pass.
func TestCloseCompletesQueuedCalls(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	l := newLimiter(t, client, c, hotlimit.WithClock(func() int64 { return int64(time.Hour) }),
		redislimit.WithBatch(64, 1), redislimit.WithTimeout(0))
	take(t, l, "warm", 1) // loads the script
	h := &heldPipelines{entered: make(chan struct{}), release: make(chan struct{})}
	h.hold.Store(2)
	client.AddHook(h)
	const calls = 12
	decisions := make([]hotlimit.Decision, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { decisions[i], errs[i] = l.TakeContext(context.Background(), "k", 1) })
		if i < 2 {
			<-h.entered // the first call by itself, then the flusher's pipeline, held while the others queue
		}
	}
	require.Eventually(t, func() bool { return redislimit.InFlight(l) == calls }, 10*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	require.Eventually(t, func() bool { return redislimit.Stopped(l) }, 10*time.Second, time.Millisecond)
	close(h.release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "queued calls stranded by Close")
	}
	require.NoError(t, <-closed)
	passed := 0
	for i := range calls {
		require.NoError(t, errs[i], "call %d", i)
		if decisions[i].Allowed {
			passed++
		}
	}
	assert.Equal(t, 5, passed)
	assert.False(t, take(t, l, "k", 1).Allowed, "after Close, decided by Redis: the key is spent")
	assert.Equal(t, 0, take(t, l, "k", 0).Remaining)
}
