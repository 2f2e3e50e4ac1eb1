package redislimit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/redis/go-redis/v9"
)

// batcher sends concurrent script calls, for any keys, in shared pipelines:
// one round trip, and one read and one write system call on each side, for
// a whole batch. See WithBatch. A caller hands over one script call (a
// Limiter's decision) or several (the takes of a TakeAll, for the limiters
// of any Config on the same client), which the batch carries together.
//
// Calls are handed over on a channel that holds a batch, so that a caller
// does not wait for a busy flusher to take its call, only for its answer. A
// call is either sent before the batcher stops, and completed by a flusher,
// which drains the channel before it returns, or not sent at all: once
// stopped, callers run their scripts directly and nothing is stranded.
//
// A caller whose context ends before its answer leaves, and the failure
// policy decides its requests, so Redis must keep none of them: the flusher
// then gives back what the call's scripts took (see call.state), or does not
// send it at all when the caller left before.
//
// It holds no reference to its Limiter, so that a Limiter dropped without
// Close is collected and its cleanup stops the flushers.
type batcher struct {
	client  redis.UniversalClient
	script  *redis.Script
	timeout time.Duration
	// clock is the limiter's injected clock, or nil for Redis's TIME: the
	// clock of its ops.
	clock hotlimit.Clock
	// enforced: the client applies context deadlines to its sockets, so a
	// call made on the caller's goroutine returns by its deadline.
	enforced bool
	// split: the client is cluster, a cluster client, whose batches go in
	// one pipeline per master (see pipelineByNode).
	split   bool
	cluster *redis.ClusterClient
	max     int
	calls   chan *call
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	// mu orders sends against close: a caller sends under the read lock,
	// having seen stopped false; close sets stopped under the write lock
	// before it closes stop, so no call enters calls once a flusher can see
	// stop closed, and a flusher that finds calls empty then can return.
	mu      sync.RWMutex
	stopped bool
}

// op is one script call.
type op struct {
	script *redis.Script
	key    string
	args   []any
	// clock is the injected clock of the op's limiter, or nil for Redis's
	// TIME: its give-back (see undo) reads it. The ops of a TakeAll in one
	// batch may be of limiters of different clocks.
	clock hotlimit.Clock
	// lim and breaker, when set, are the op's Limiter and the breaker of
	// its key's node: on a cluster client, when the op's caller left its
	// batch before its answer, the flusher tells the breaker how Redis did
	// (see answer, leftError), since the caller's own error (its deadline)
	// says nothing of the op's node. They are held only while the call is.
	lim     *Limiter
	breaker *breaker
	// ahead: the op is a take asked ahead (see Take.Ahead), which its
	// caller asks again in its turn when Redis did not answer it, and that
	// call tells the breaker: answer does not tell it then, or the take's
	// failure would count twice. Never set for a give-back, which is not
	// asked again.
	ahead bool
	rep   reply
	err   error
}

// call is the script calls of one caller, waiting for their batch.
type call struct {
	ops  []op
	done chan struct{} // receives once every op is complete
	// state is pending until either the goroutine that runs the ops
	// answers the call or its caller leaves, whichever changes it first by
	// CompareAndSwap: the other then knows. done receives only for an
	// answered call; for a call whose caller left, the goroutine that ran
	// the ops gives back what they took (their decisions are the failure
	// policy's) and frees the call.
	state atomic.Int32
}

// The values of call.state.
const (
	pending int32 = iota
	answered
	left
)

var callPool = sync.Pool{New: func() any { return &call{ops: make([]op, 0, 1), done: make(chan struct{}, 1)} }}

// newCall returns a call without ops, from the pool.
func newCall() *call {
	c := callPool.Get().(*call)
	c.ops = c.ops[:0]
	c.state.Store(pending)
	return c
}

// answer hands c's replies to its caller, unless the caller has left: then
// it gives back what c's ops took, and frees c. Only the goroutine that ran
// c's ops calls it, once.
func (b *batcher) answer(c *call) {
	if answerHook != nil {
		answerHook()
	}
	// The CAS decides between the caller and the goroutine that ran the
	// ops: exactly one of pending → answered (here) and pending → left
	// (leave) succeeds, so either the caller reads the replies, or the
	// requests are given back, never both and never neither.
	if c.state.CompareAndSwap(pending, answered) {
		c.done <- struct{}{}
		return
	}
	if b.split { // the caller's error was a leftError (see wait)
		// One round trip: once per breaker. A take asked ahead that Redis
		// did not answer is its turn's to tell (see op.ahead).
		var v verdicts
		for i := range c.ops {
			if o := &c.ops[i]; o.lim != nil && (!o.ahead || redisAnswered(o.err)) {
				v.add(o.lim, o.breaker, o.err)
			}
		}
		v.tell(context.Background())
		if leftHook != nil {
			leftHook()
		}
	}
	b.undo(c.ops)
	c.free()
}

// answerHook and leftHook, when set (by tests, before the limiter is
// built; removed once it is closed), are called by answer: answerHook
// before it decides between the call's caller and itself, leftHook once
// it has told the breakers how the ops of a call whose caller left did.
var answerHook, leftHook func()

// leftError is the error of a call whose caller stopped waiting (its
// context ended, or the limiter's timeout passed) before its batch was
// answered, on a cluster client: the batch's other calls may be for
// another node, which does not answer. It wraps the context's error. It
// says nothing of the call's node: the flusher, if it sent the call, tells
// the node's breaker how Redis did (see answer; of a take asked ahead that
// Redis did not answer, the take's turn does), so the caller does not (see
// Limiter.observe). On a single node, a batch's timeout is the node's.
type leftError struct{ err error }

func (e leftError) Error() string { return e.err.Error() }
func (e leftError) Unwrap() error { return e.err }

// isLeft reports whether err is a leftError.
func isLeft(err error) bool {
	var le leftError
	return errors.As(err, &le)
}

// leave tells the goroutine running c's ops that the caller stops waiting,
// and reports whether it did so in time; when not, the replies are there,
// and done receives at once.
func (c *call) leave() bool {
	return c.state.CompareAndSwap(pending, left)
}

// undo gives back to Redis what ops took, the calls of a caller that left:
// each op that passed returns its n and what it leased beyond, taken at the
// time Redis took them, as far as they still count now (see
// hotlimit.Refunder). Now is a fresh reading of each op's clock, not the
// take's: judged at the take's time, a give-back would return requests
// that have refilled since, into a key whose later takes counted on that
// refill.
// The give-backs travel in one pipeline; one that fails leaves its requests
// counted until they age out.
func (b *batcher) undo(ops []op) {
	var back []*op
	for i := range ops {
		o := &ops[i]
		if o.err != nil || !o.rep.allowed {
			continue
		}
		n, _ := o.args[0].(int64)
		if n+o.rep.got < 1 {
			continue
		}
		now, err := nowArg(o.clock)
		if err != nil {
			continue // the clock cannot be read exactly: nothing is given back
		}
		// ARGV (see scripts/prelude.lua): take nothing, now, give back
		// n + got taken at rep.now.
		args := slices.Clone(o.args)
		args[0], args[1], args[6], args[7], args[8] = int64(0), now, int64(0), n+o.rep.got, o.rep.now
		back = append(back, &op{script: o.script, key: o.key, args: args, clock: o.clock})
	}
	if len(back) > 0 {
		b.rerun(context.Background(), back)
	}
}

// free returns c to the pool, once nothing else holds it.
func (c *call) free() {
	clear(c.ops)
	callPool.Put(c)
}

// errStopped is wait's answer once the batcher is stopped: the call was not
// sent.
var errStopped = errors.New("redislimit: batcher stopped")

// newBatcher returns the batcher of l, with flushers goroutines sending
// batches of up to max calls; max 0 sends every call by itself.
func newBatcher(l *Limiter, max, flushers int) *batcher {
	b := &batcher{client: l.client, script: l.script, timeout: l.set.timeout, clock: l.clock, enforced: enforcesDeadlines(l.client),
		max: max, calls: make(chan *call, max), stop: make(chan struct{})}
	b.cluster, b.split = l.client.(*redis.ClusterClient)
	for range min(max, 1) * flushers {
		b.wg.Go(b.flush)
	}
	return b
}

// do runs the script for redisKey with args in the next batch, for lim, br
// the breaker of redisKey's node. It returns ctx's error (see left) if ctx
// ends first, or the limiter's timeout passes, counted from
// the call, not from its batch: a call may first wait for a flusher busy
// with an earlier batch. The call may still run.
func (b *batcher) do(ctx context.Context, redisKey string, args []any, lim *Limiter, br *breaker) (reply, error) {
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	c := newCall()
	c.ops = append(c.ops, op{script: b.script, key: redisKey, args: args, clock: b.clock, lim: lim, breaker: br})
	switch err := b.wait(ctx, c); err {
	case nil:
		rep, err := c.ops[0].rep, c.ops[0].err
		c.free()
		return rep, err
	case errStopped:
		c.free()
		return b.alone(ctx, redisKey, args)
	default:
		return reply{}, err // c is the flusher's, which gives back what it took, or freed
	}
}

// wait hands c to the next batch, and waits until the batch completed it.
// It returns errStopped, without sending c, once the batcher is stopped,
// and ctx's error (see left) if ctx ends first, when c is no longer the
// caller's: freed if it was never sent, else left to the flusher, which
// may still send it and then gives back what it took (and
// on a cluster client tells the breakers of c's ops how Redis did): Redis keeps
// nothing of a call for which wait returns an error (unless the give-back
// fails, or the flusher's own deadline passes first, when a frozen Redis
// may still run the call later; see WithTimeout).
func (b *batcher) wait(ctx context.Context, c *call) error {
	b.mu.RLock()
	if b.stopped {
		b.mu.RUnlock()
		return errStopped
	}
	select {
	case b.calls <- c: // a full channel waits for a flusher, which runs until stopped
	case <-ctx.Done():
		b.mu.RUnlock()
		c.free() // never sent: nothing else holds it
		return b.left(ctx)
	}
	b.mu.RUnlock()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		if c.leave() {
			return b.left(ctx)
		}
		<-c.done // answered just now
		return nil
	}
}

// left returns the error of a caller that stopped waiting for its batch
// when ctx ended: a leftError on a cluster client, ctx's error on a single
// node.
func (b *batcher) left(ctx context.Context) error {
	if b.split {
		return leftError{ctx.Err()}
	}
	return ctx.Err()
}

// flush gathers the calls that are waiting, up to max script calls or just
// past it, and sends them in one pipeline, until stop.
func (b *batcher) flush() {
	batch := make([]*call, 0, b.max)
	var cmds []*redis.Cmd
	for {
		batch = batch[:0]
		var n int
		select {
		case c := <-b.calls:
			batch, n = append(batch, c), len(c.ops)
		case <-b.stop:
			select { // the calls sent before stop
			case c := <-b.calls:
				batch, n = append(batch, c), len(c.ops)
			default:
				return
			}
		}
	gather:
		for n < b.max {
			select {
			case c := <-b.calls:
				batch, n = append(batch, c), n+len(c.ops)
			default:
				break gather
			}
		}
		// Calls whose callers left already are not sent (a caller may
		// still leave meanwhile: answer gives its requests back).
		batch = slices.DeleteFunc(batch, func(c *call) bool {
			if c.state.Load() == left {
				c.free()
				return true
			}
			return false
		})
		if len(batch) == 0 {
			continue
		}
		ctx, cancel := b.deadline(context.Background())
		cmds = b.pipeline(ctx, context.Background(), batch, cmds[:0])
		cancel()
		for _, c := range batch {
			b.answer(c)
		}
		// The calls are their callers' or the pool's again: a stale
		// pointer here would keep what a later owner puts in one (its
		// Limiter, in op.lim and op.breaker) reachable for as long as this
		// flusher runs, and a Limiter dropped without Close would never be
		// collected, nor its flushers stopped.
		clear(batch)
	}
}

// deadline bounds ctx by the limiter's timeout.
func (b *batcher) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.timeout > 0 {
		return context.WithTimeout(ctx, b.timeout)
	}
	return ctx, func() {}
}

// pipeline sends every op of batch in one pipeline under ctx, and sets
// their replies. Ops that meet NOSCRIPT (a restarted server, SCRIPT FLUSH)
// are sent again under retry: the first of each script by itself with EVAL,
// which loads it, the others then in one more pipeline. cmds is reused. On
// a cluster client, pipelineByNode sends them instead.
func (b *batcher) pipeline(ctx, retry context.Context, batch []*call, cmds []*redis.Cmd) []*redis.Cmd {
	if b.split {
		b.pipelineByNode(ctx, batch)
		return cmds
	}
	pipe := b.client.Pipeline()
	for _, c := range batch {
		for i := range c.ops {
			o := &c.ops[i]
			cmds = append(cmds, o.script.EvalSha(ctx, scripter(pipe, o.args), []string{o.key}, o.args...))
		}
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	var again []*op
	var loaded []*redis.Script
	j := 0
	for _, c := range batch {
		for i := range c.ops {
			o := &c.ops[i]
			o.rep, o.err = parse(cmds[j])
			cmds[j] = nil
			j++
			switch {
			case !isNoScript(o.err):
			case slices.Contains(loaded, o.script):
				again = append(again, o)
			default:
				o.rep, o.err = b.runOne(retry, o.script, o.key, o.args)
				loaded = append(loaded, o.script)
			}
		}
	}
	if len(again) > 0 {
		b.rerun(retry, again)
	}
	return cmds
}

// pipelineByNode sends the ops of batch, on a cluster client, in one
// pipeline per master of their keys (as the client's slot map has it), all
// at once, and sets their replies. One pipeline for them all would go to
// each master at once too, but go-redis gives every command of a pipeline
// the error of a master that does not answer by ctx's deadline, the other
// masters' answers included: their callers would get the failure policy's
// decisions for requests that Redis counted, the calls that their callers
// left would not give back what those masters took, and their breakers
// would count failures that their masters did not have, and open (see
// WithBreaker). The masters are looked up here rather than read from the
// ops' breakers, of which a limiter without a breaker has one for all.
func (b *batcher) pipelineByNode(ctx context.Context, batch []*call) {
	groups := map[string][]*op{}
	for _, c := range batch {
		for i := range c.ops {
			o := &c.ops[i]
			addr := "" // no slot map: one pipeline, which meets the same error
			if node, err := b.cluster.MasterForKey(ctx, o.key); err == nil {
				addr = node.Options().Addr
			}
			groups[addr] = append(groups[addr], o)
		}
	}
	var wg sync.WaitGroup
	for _, ops := range groups {
		wg.Go(func() { b.rerun(ctx, ops) })
	}
	wg.Wait()
}

// rerun sends ops again in one pipeline under ctx, now that their scripts
// are loaded, and runs by itself any that still meets NOSCRIPT. (On a
// cluster client, pipelineByNode also sends a batch's ops with it.)
func (b *batcher) rerun(ctx context.Context, ops []*op) {
	ctx, cancel := b.deadline(ctx)
	defer cancel()
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(ops))
	for i, o := range ops {
		cmds[i] = o.script.EvalSha(ctx, scripter(pipe, o.args), []string{o.key}, o.args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, o := range ops {
		o.rep, o.err = parse(cmds[i])
		if isNoScript(o.err) {
			o.rep, o.err = b.runOne(ctx, o.script, o.key, o.args)
		}
	}
}

// close stops the flushers once they finish their batches.
func (b *batcher) close() {
	b.once.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stop)
	})
	b.wg.Wait()
}

// alone runs the script for redisKey by itself for a caller that must have
// its answer by ctx's deadline or the limiter's timeout: on the caller's
// goroutine when the client enforces deadlines, else on a goroutine of its
// own that the caller stops waiting for at the deadline.
func (b *batcher) alone(ctx context.Context, redisKey string, args []any) (reply, error) {
	if b.enforced || b.timeout <= 0 && ctx.Done() == nil {
		return b.runOne(ctx, b.script, redisKey, args)
	}
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	c := newCall()
	c.ops = append(c.ops, op{script: b.script, key: redisKey, args: args, clock: b.clock})
	go func() {
		c.ops[0].rep, c.ops[0].err = b.runOne(ctx, b.script, redisKey, args)
		b.answer(c)
	}()
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.leave() {
			return reply{}, ctx.Err() // c is left to its goroutine, which gives back what it took
		}
		<-c.done // answered just now
	}
	rep, err := c.ops[0].rep, c.ops[0].err
	c.free()
	return rep, err
}

// runOne runs script for redisKey by itself: EVALSHA, and EVAL when the
// server answers NOSCRIPT (after a restart or SCRIPT FLUSH), which also loads
// it for the next calls.
func (b *batcher) runOne(ctx context.Context, script *redis.Script, redisKey string, args []any) (reply, error) {
	ctx, cancel := b.deadline(ctx)
	defer cancel()
	return parse(script.Run(ctx, scripter(b.client, args), []string{redisKey}, args...))
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
