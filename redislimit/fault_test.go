package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
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

// The fault tests: Redis killed, frozen (SIGSTOP) and restarted under a
// Limiter; cluster_test.go kills a cluster master.

// prompt bounds any single call made while Redis is down or frozen: the
// limiter's timeout or go-redis's few quick retries against a refused
// connection, with room for a noisy 2-core machine under -race.
const prompt = time.Second

// faultConfig is the Config of the fault tests: with a frozen clock a
// fresh key passes exactly faultLimit requests, in Redis or in memory.
const faultLimit = 5

var faultConfig = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: faultLimit, Window: time.Minute}

// frozenClock returns a clock option whose reading never moves.
func frozenClock() hotlimit.Option {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	return hotlimit.WithClock(now.Load)
}

// hookLog records the events of WithHook.
type hookLog struct {
	mu     sync.Mutex
	events []redislimit.Event
}

func (h *hookLog) add(ev redislimit.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *hookLog) snapshot() []redislimit.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// result is one TakeContext call.
type result struct {
	key  string
	n    int
	d    hotlimit.Decision
	err  error
	took time.Duration
}

func call(lim *redislimit.Limiter, key string, n int) result {
	start := time.Now()
	d, err := lim.TakeContext(context.Background(), key, n)
	return result{key: key, n: n, d: d, err: err, took: time.Since(start)}
}

// load runs workers goroutines calling next(worker, i) for the request of
// their i-th call until stop is closed or a worker's calls are done (calls
// < 0: no bound), and returns every call made.
func load(lim *redislimit.Limiter, workers, calls int, stop <-chan struct{}, next func(w, i int) (string, int)) []result {
	var mu sync.Mutex
	var all []result
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var mine []result
			defer func() {
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			}()
			for i := 0; calls < 0 || i < calls; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key, n := next(w, i)
				mine = append(mine, call(lim, key, n))
				if i%64 == 63 {
					time.Sleep(time.Millisecond) // leave the CPU to the test
				}
			}
		})
	}
	wg.Wait()
	return all
}

// checkFallback checks a decision made by policy p (err != nil) for n
// requests, apart from FailLocal's counts, which the caller checks.
func checkFallback(t *testing.T, p redislimit.FailPolicy, r result) {
	t.Helper()
	msg := fmt.Sprintf("%v: Take(%q, %d) = %+v, %v", p, r.key, r.n, r.d, r.err)
	if r.n > faultLimit {
		assert.False(t, r.d.Allowed, msg)
		assert.Equal(t, hotlimit.Never, r.d.RetryAfter, msg)
		return
	}
	switch p {
	case redislimit.FailOpen:
		assert.True(t, r.d.Allowed, msg)
		assert.Zero(t, r.d.RetryAfter, msg)
	case redislimit.FailClosed:
		assert.Equal(t, r.n == 0, r.d.Allowed, msg)
		if r.n > 0 {
			assert.Positive(t, r.d.RetryAfter, msg)
		}
	}
}

// waitForRedis calls Take on key until Redis decides (err nil), for at most
// timeout, and returns that decision.
func waitForRedis(t *testing.T, lim *redislimit.Limiter, key string, timeout time.Duration) hotlimit.Decision {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d, err := lim.TakeContext(context.Background(), key, 1)
		if err == nil {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis still not deciding after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedisKilledMidLoad kills Redis under 4 goroutines taking on a few
// keys, for each policy: every call returns promptly; a call Redis did not
// decide returns an error with the policy's decision, and the hook sees
// each of them; with FailLocal and a frozen clock, exactly the limit passes
// per key decided only after the kill, as an in-process limiter would give.
// After a restart, Redis decides again within a few seconds.
func TestRedisKilledMidLoad(t *testing.T) {
	for _, p := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		t.Run(p.String(), func(t *testing.T) {
			srv := redistest.Start(t)
			hook := &hookLog{}
			lim := newLimiter(t, srv.Client(), faultConfig, frozenClock(), redislimit.WithFailPolicy(p),
				redislimit.WithBreaker(3, 100*time.Millisecond), redislimit.WithHook(hook.add))
			const workers = 4
			// The script loaded and a connection made, by a limiter of
			// its own on the same client: the load's first calls are not
			// the slow ones that dial and meet NOSCRIPT, which on a loaded
			// machine could all pass the timeout and open the breaker.
			take(t, newExact(t, srv.Client(), faultConfig, frozenClock()), "warm", 1)

			// Before the kill and across it: keys k0..k2, n = 1.
			stop := make(chan struct{})
			stopLoad := sync.OnceFunc(func() { close(stop) })
			t.Cleanup(stopLoad) // a failed require below leaves no load running into the next tests
			done := make(chan []result, 1)
			var asked atomic.Int64 // calls begun; each past a worker's first follows one of its calls
			go func() {
				done <- load(lim, workers, -1, stop, func(w, i int) (string, int) {
					asked.Add(1)
					return fmt.Sprintf("k%d", (w+i)%3), 1
				})
			}()
			// Kill Redis once it has decided some calls: on a loaded
			// machine a fixed wait may end before any call did, and the
			// calls begun may all have been decided by the policy (the
			// timeout, then the breaker). Of the calls begun, all but at
			// most one per worker are done, and the hook has seen each
			// one the policy decided (and perhaps some under way): more
			// done than that, and Redis decided at least one.
			require.Eventually(t, func() bool { return asked.Load()-workers > int64(len(hook.snapshot())) },
				10*time.Second, time.Millisecond, "no call of the load was decided by Redis")
			srv.Kill()
			time.Sleep(150 * time.Millisecond)
			stopLoad()
			across := <-done

			// After the kill: fresh keys f0..f3, each asked for 1 request 3 × the
			// limit times, plus n = 0 and n > limit calls.
			after := load(lim, workers, 3*faultLimit+2, nil, func(w, i int) (string, int) {
				key := fmt.Sprintf("f%d", w)
				switch i {
				case 0:
					return key, 0
				case 1:
					return key, faultLimit + 1
				}
				return key, 1
			})

			var fromRedis, errs int
			var slowest time.Duration
			redisPassed := map[string]int{}
			localPassed := map[string]int{}
			for _, r := range slices.Concat(across, after) {
				assert.Less(t, r.took, prompt, "Take(%q, %d) took too long", r.key, r.n)
				slowest = max(slowest, r.took)
				if r.err == nil {
					fromRedis++
					if r.d.Allowed {
						redisPassed[r.key] += r.n
					}
					continue
				}
				errs++
				checkFallback(t, p, r)
				if r.d.Allowed {
					localPassed[r.key] += r.n
				}
			}
			for _, r := range after {
				assert.Error(t, r.err, "Take(%q, %d) after the kill", r.key, r.n)
			}
			for key, n := range redisPassed {
				assert.LessOrEqual(t, n, faultLimit, "%s passed by Redis", key)
			}
			if p == redislimit.FailLocal {
				for key, n := range localPassed {
					assert.LessOrEqual(t, n, faultLimit, "%s passed by the local limiter", key)
				}
				for w := range workers {
					key := fmt.Sprintf("f%d", w)
					assert.Equal(t, faultLimit, localPassed[key], "%s passed after the kill", key)
				}
			}
			assert.Positive(t, fromRedis, "Redis decided nothing before the kill")
			events := hook.snapshot()
			assert.Equal(t, errs, len(events), "hook calls against errors returned")
			for _, ev := range events {
				assert.Error(t, ev.Err, "%+v", ev)
				assert.Equal(t, p, ev.Policy, "%+v", ev)
			}
			t.Logf("%d calls across the kill, %d after; %d decided by Redis, %d by the policy; slowest %v",
				len(across), len(after), fromRedis, errs, slowest)

			srv.Restart()
			waitForRedis(t, lim, "probe", 5*time.Second)
			for i := range faultLimit + 1 {
				d, err := lim.TakeContext(context.Background(), "r", 1)
				require.NoError(t, err, "after the restart")
				assert.Equal(t, i < faultLimit, d.Allowed, "request %d of a fresh key after the restart", i+1)
			}
		})
	}
}

// isTimeout reports whether err is a timeout: the context's deadline or a
// socket deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// TestRedisPausedBreaker freezes Redis (SIGSTOP): the first 3 calls fail
// with a timeout after about WithTimeout; then the breaker opens and calls
// fail at once with ErrBreakerOpen, without touching Redis, until the
// cooldown has passed after Redis is back; then one probe closes it and
// Redis decides again. The breaker's clock is the test's, frozen while the
// breaker is open and moved past the cooldown, so that no delay of a loaded
// machine ends the cooldown early or the test late; the timeout, 400 ms, is
// long enough that Redis answers the calls it must decide within it.
func TestRedisPausedBreaker(t *testing.T) {
	const timeout, cooldown = 400 * time.Millisecond, 300 * time.Millisecond
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	var events atomic.Int64
	lim := newLimiter(t, client, faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithTimeout(timeout), redislimit.WithBreaker(3, cooldown), redislimit.WithBatch(0, 1),
		redislimit.WithHook(func(redislimit.Event) { events.Add(1) }))
	take(t, lim, "warm", 1)

	srv.Pause()
	for i := range 3 {
		r := call(lim, fmt.Sprintf("p%d", i), 1)
		require.Error(t, r.err, "call %d while paused", i+1)
		assert.True(t, isTimeout(r.err), "call %d while paused: %v", i+1, r.err)
		assert.False(t, errors.Is(r.err, redislimit.ErrBreakerOpen), "call %d: the breaker opened too early", i+1)
		assert.GreaterOrEqual(t, r.took, timeout*9/10, "call %d returned before the timeout", i+1)
		assert.Less(t, r.took, prompt, "call %d overran the timeout", i+1)
		assert.False(t, r.d.Allowed, "FailClosed")
	}

	var took []time.Duration
	for i := range 200 {
		r := call(lim, fmt.Sprintf("o%d", i), 1)
		took = append(took, r.took)
		require.ErrorIs(t, r.err, redislimit.ErrBreakerOpen, "call %d with the breaker open", i+1)
		require.False(t, r.d.Allowed, "FailClosed")
	}
	slices.Sort(took)
	assert.Less(t, took[len(took)/2], time.Millisecond, "median call with the breaker open")

	srv.Resume()
	breakerNow.Add(int64(cooldown * 8 / 10))
	r := call(lim, "early", 1)
	assert.ErrorIs(t, r.err, redislimit.ErrBreakerOpen, "Redis back, but the cooldown has not passed")
	breakerNow.Add(int64(cooldown * 3 / 10))
	probe := call(lim, "fresh", 1)
	require.NoError(t, probe.err, "the probe after the cooldown")
	assert.True(t, probe.d.Allowed)
	assert.Equal(t, faultLimit-1, probe.d.Remaining, "the probe's key is fresh")
	for i := 1; i <= faultLimit; i++ {
		d := take(t, lim, "fresh", 1) // the breaker is closed: Redis decides
		assert.Equal(t, i < faultLimit, d.Allowed, "request %d of a fresh key", i+1)
	}
	assert.Equal(t, int64(3+200+1), events.Load(), "hook calls: 3 timeouts, 200 open, 1 early")
}

// slowEval is a go-redis hook that delays every EVAL sent alone, so that
// concurrent calls reach a restarted Redis in a pipeline of EVALSHA before
// the script is loaded again; it counts the pipelined commands answered
// NOSCRIPT.
type slowEval struct{ pipedNoScript atomic.Int64 }

func (h *slowEval) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slowEval) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "eval") {
			time.Sleep(20 * time.Millisecond)
		}
		return next(ctx, cmd)
	}
}

func (h *slowEval) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
				h.pipedNoScript.Add(1)
			}
		}
		return err
	}
}

// TestRedisRestartReloadsScripts restarts Redis, whose fresh process has an
// empty script cache: the next decisions, batched (a pipeline of EVALSHA,
// each NOSCRIPT run again alone) and alone (EVALSHA, NOSCRIPT, EVAL), come
// from Redis without an error, and the keys start fresh. Each call has
// exactTimeout: the reconnections and the slow EVAL must not leave a call
// to the failure policy on a loaded machine. So does the client's read
// timeout, as newClient's: past go-redis's default (5 s) it sends the
// take again, which Redis then counts twice.
func TestRedisRestartReloadsScripts(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, DialerRetries: 1, ContextTimeoutEnabled: true, ReadTimeout: exactTimeout})
	t.Cleanup(func() { _ = client.Close() })
	hook := &slowEval{}
	client.AddHook(hook)
	lim := newExact(t, client, faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed))
	for i := range faultLimit + 1 {
		assert.Equal(t, i < faultLimit, take(t, lim, "k", 1).Allowed, "request %d of k", i+1)
	}

	// Concurrent calls: the first goes alone and its EVAL is slow, so the
	// others meet NOSCRIPT in a batch.
	srv.Restart()
	results := load(lim, 8, faultLimit+1, nil, func(w, i int) (string, int) { return fmt.Sprintf("b%d", w), 1 })
	passed := map[string]int{}
	for _, r := range results {
		require.NoError(t, r.err, "Take(%q) after the restart", r.key)
		if r.d.Allowed {
			passed[r.key]++
		}
	}
	for w := range 8 {
		assert.Equal(t, faultLimit, passed[fmt.Sprintf("b%d", w)], "b%d after the restart", w)
	}
	assert.Positive(t, hook.pipedNoScript.Load(), "no batched call met NOSCRIPT: the test did not test it")

	// A call alone after another restart: EVALSHA, NOSCRIPT, then EVAL.
	srv.Restart()
	d := take(t, lim, "k", 1)
	assert.True(t, d.Allowed, "k starts fresh after the restart")
	assert.Equal(t, faultLimit-1, d.Remaining, "k starts fresh after the restart")
	for i := 1; i <= faultLimit; i++ {
		assert.Equal(t, i < faultLimit, take(t, lim, "k", 1).Allowed, "request %d of k", i+1)
	}
}

// deadAddr returns a loopback address where nothing listens: port 1. A
// port found free and closed again would not do: a redis-server another
// test starts meanwhile could take it, and the test would reach a Redis.
func deadAddr(*testing.T) string {
	return "127.0.0.1:1"
}

// TestDeadRedisDefaultClientIsPrompt: against a port where nothing listens,
// with a client of default options (go-redis then retries each dial with
// back-off), decisions come from the failure policy at once, not after the
// client's own retries: the limiter's default timeout bounds every call and
// the breaker opens after three.
func TestDeadRedisDefaultClientIsPrompt(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialTimeout: 200 * time.Millisecond, MaxRetries: 0})
	t.Cleanup(func() { _ = client.Close() })
	lim := newLimiter(t, client, faultConfig, frozenClock())
	start := time.Now()
	for i := range 20 {
		d, err := lim.TakeContext(context.Background(), "k", 1)
		require.Error(t, err, "decision %d", i+1)
		assert.Equal(t, i < faultLimit, d.Allowed, "decision %d: FailLocal decides in memory", i+1)
	}
	assert.Less(t, time.Since(start), prompt, "20 decisions against a dead port")
}

// TestPausedRedisDefaultClientIsPrompt: a frozen Redis (SIGSTOP) accepts
// connections and never answers; with a client of default options, whose
// read timeout is 5 s and which ignores context deadlines on its sockets,
// decisions still come from the failure policy within the limiter's default
// timeout, and from Redis again once it answers. The breaker's clock is the
// test's, frozen while Redis is paused: a loaded machine that stalls the
// calls past the cooldown would otherwise let a probe through, a fourth
// timeout among the calls the open breaker must turn away.
func TestPausedRedisDefaultClientIsPrompt(t *testing.T) {
	const cooldown = 200 * time.Millisecond
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = client.Close() })
	obs := &fallbackLog{}
	lim := newLimiter(t, client, faultConfig, frozenClock(), redislimit.WithBreaker(3, cooldown), hotlimit.WithObserver(obs))
	take(t, lim, "warm", 1)

	srv.Pause()
	var slowest time.Duration
	for i := range 20 {
		start := time.Now()
		_, err := lim.TakeContext(context.Background(), fmt.Sprintf("p%d", i), 1)
		slowest = max(slowest, time.Since(start))
		require.Error(t, err, "decision %d while paused", i+1)
		if i < 3 { // the limiter's deadline ended the call, not the client's 5 s read timeout
			assert.ErrorIs(t, err, context.DeadlineExceeded, "decision %d while paused", i+1)
			assert.Contains(t, err.Error(), "WithTimeout's "+redislimit.DefaultTimeout.String(), "decision %d while paused", i+1)
		}
	}
	srv.Resume()
	assert.Less(t, slowest, prompt, "the slowest of 20 decisions against a paused Redis")
	assert.Less(t, redislimit.DefaultTimeout, prompt/4, "the default timeout is short")
	reasons := obs.reasons()
	require.Len(t, reasons, 20, "the observer hears of every fallback")
	assert.Equal(t, []string{"timeout", "timeout", "timeout"}, reasons[:3], "three timeouts open the breaker")
	for i, r := range reasons[3:] {
		assert.Equal(t, "breaker_open", r, "fallback %d", i+4)
	}

	require.Eventually(t, func() bool {
		breakerNow.Add(int64(cooldown)) // each try past the cooldown: a probe
		_, err := lim.TakeContext(context.Background(), "back", 0)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "Redis decides again once it answers")
}

// fallbackLog is a hotlimit.FallbackObserver that records the reasons.
type fallbackLog struct {
	mu  sync.Mutex
	got []hotlimit.Fallback
}

func (f *fallbackLog) Observe(hotlimit.Event) {}

func (f *fallbackLog) ObserveFallback(fb hotlimit.Fallback) {
	f.mu.Lock()
	f.got = append(f.got, fb)
	f.mu.Unlock()
}

func (f *fallbackLog) reasons() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var r []string
	for _, fb := range f.got {
		if fb.Backend == "redis" && fb.Policy == faultConfig {
			r = append(r, fb.Reason)
		}
	}
	return r
}

func TestReason(t *testing.T) {
	assert.Equal(t, "breaker_open", redislimit.Reason(redislimit.ErrBreakerOpen))
	assert.Equal(t, "timeout", redislimit.Reason(fmt.Errorf("x: %w", context.DeadlineExceeded)))
	assert.Equal(t, "canceled", redislimit.Reason(context.Canceled))
	assert.Equal(t, "clock_range", redislimit.Reason(redislimit.ErrClockRange))
	assert.Equal(t, "error", redislimit.Reason(errors.New("ERR something")))
	assert.Equal(t, "timeout", redislimit.Reason(&net.OpError{Op: "read", Err: timeoutErr{}}))
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestTimeoutErrorNamesRedis: a call that Redis does not answer in time (a
// server that accepts the connection and never replies) fails with an error
// that says Redis gave no answer before the deadline, and how it is set,
// rather than a bare "context deadline exceeded" (a client without
// ContextTimeoutEnabled) or "i/o timeout" (one with it), which an observer
// logging it would take for the request's own deadline; it still counts as
// a "timeout".
func TestTimeoutErrorNamesRedis(t *testing.T) {
	addr := silentServer(t)
	for _, enforced := range []bool{false, true} {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: enforced, MaxRetries: -1})
		t.Cleanup(func() { _ = client.Close() })
		lim := newLimiter(t, client, faultConfig, frozenClock(), redislimit.WithTimeout(20*time.Millisecond), redislimit.WithBreaker(0, 0))
		_, err := lim.TakeContext(context.Background(), "k", 1)
		require.Error(t, err, "ContextTimeoutEnabled %t", enforced)
		assert.Equal(t, "timeout", redislimit.Reason(err), "ContextTimeoutEnabled %t", enforced)
		assert.Contains(t, err.Error(), "no answer from Redis before the deadline", "ContextTimeoutEnabled %t: the error says Redis did not answer", enforced)
		assert.Contains(t, err.Error(), "WithTimeout", "ContextTimeoutEnabled %t: and what bounds the wait", enforced)
	}
}

// TestTimeoutErrorNamesTheDeadlineThatPassed: the error of a call Redis did
// not answer names the bounds that could have ended it as they are, not as
// they would be by default. A client whose own ReadTimeout (10 ms) is
// shorter than the limiter's timeout gives up on a silent server
// first, with its socket's "i/o timeout": the error names the client's
// timeouts, and WithTimeout's as set (an hour, so that only the read
// timeout can end the call), not a 100 ms default the limiter does not
// use. A call under the limiter's timeout alone says that timeout, and one
// whose limiter has none says so.
func TestTimeoutErrorNamesTheDeadlineThatPassed(t *testing.T) {
	addr := silentServer(t)
	newClient := func(readTimeout time.Duration) *redis.Client {
		client := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: readTimeout, MaxRetries: -1})
		t.Cleanup(func() { _ = client.Close() })
		return client
	}

	lim := newLimiter(t, newClient(10*time.Millisecond), faultConfig, frozenClock(), redislimit.WithTimeout(time.Hour), redislimit.WithBreaker(0, 0))
	_, err := lim.TakeContext(context.Background(), "k", 1)
	require.Error(t, err)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the client's read timeout ended the call")
	assert.Equal(t, "timeout", redislimit.Reason(err))
	assert.Contains(t, err.Error(), "ReadTimeout", "the client's own timeout is named")
	assert.Contains(t, err.Error(), "WithTimeout's 1h0m0s", "the limiter's timeout as set")
	assert.NotContains(t, err.Error(), "100ms", "not the default, which is not in force")

	lim = newLimiter(t, newClient(time.Hour), faultConfig, frozenClock(), redislimit.WithTimeout(20*time.Millisecond), redislimit.WithBreaker(0, 0))
	_, err = lim.TakeContext(context.Background(), "k", 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "no answer from Redis before the deadline (WithTimeout's 20ms or the caller's)")

	lim = newLimiter(t, newClient(time.Hour), faultConfig, frozenClock(), redislimit.WithTimeout(0), redislimit.WithBreaker(0, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = lim.TakeContext(ctx, "k", 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "no answer from Redis before the deadline (the caller's; WithTimeout is off)")
}

// silentServer returns the address of a server that accepts connections and
// never answers on them, holding each open until the test ends: a Redis that
// does not reply in time.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // held open, never answered
		}
	}()
	return ln.Addr().String()
}
