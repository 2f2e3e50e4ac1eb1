package redislimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends concurrent script calls, for any keys, in shared pipelines:
// one round trip, and one read and one write system call on each side, for
// a whole batch. See WithBatch.
//
// Calls are handed over on an unbuffered channel, so a call is either
// received by a flusher, which always completes it, or not sent at all: once
// stop is closed, callers run their script directly and nothing is stranded.
//
// It holds no reference to its Limiter, so that a Limiter dropped without
// Close is collected and its cleanup stops the flushers.
type batcher struct {
	client  redis.UniversalClient
	script  *redis.Script
	timeout time.Duration
	// enforced: the client applies context deadlines to its sockets, so a
	// call made on the caller's goroutine returns by its deadline.
	enforced bool
	max      int
	calls    chan *call
	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
}

// call is one script call waiting for its batch.
type call struct {
	key  string
	args []any
	rep  reply
	err  error
	done chan struct{} // receives once the call is complete
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// newBatcher returns the batcher of l, with flushers goroutines sending
// batches of up to max calls; max 0 sends every call by itself.
func newBatcher(l *Limiter, max, flushers int) *batcher {
	b := &batcher{client: l.client, script: l.script, timeout: l.set.timeout, enforced: enforcesDeadlines(l.client),
		max: max, calls: make(chan *call), stop: make(chan struct{})}
	for range min(max, 1) * flushers {
		b.wg.Go(b.flush)
	}
	return b
}

// do runs the script for redisKey with args in the next batch. It returns
// ctx's error if ctx ends first, or the limiter's timeout passes, counted
// from the call, not from its batch: a call may first wait for a flusher
// busy with an earlier batch. The call may still run.
func (b *batcher) do(ctx context.Context, redisKey string, args []any) (reply, error) {
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	c := callPool.Get().(*call)
	c.key, c.args = redisKey, args
	select {
	case b.calls <- c:
	case <-b.stop:
		callPool.Put(c)
		return b.alone(ctx, redisKey, args)
	case <-ctx.Done():
		callPool.Put(c)
		return reply{}, ctx.Err()
	}
	select {
	case <-c.done:
		rep, err := c.rep, c.err
		c.key, c.args, c.rep, c.err = "", nil, reply{}, nil
		callPool.Put(c)
		return rep, err
	case <-ctx.Done():
		return reply{}, ctx.Err() // c is left to the flusher and the collector
	}
}

// flush gathers the calls that are waiting, up to max, and sends them in one
// pipeline, until stop.
func (b *batcher) flush() {
	batch := make([]*call, 0, b.max)
	cmds := make([]*redis.Cmd, 0, b.max)
	for {
		batch = batch[:0]
		select {
		case c := <-b.calls:
			batch = append(batch, c)
		case <-b.stop:
			return
		}
	gather:
		for len(batch) < b.max {
			select {
			case c := <-b.calls:
				batch = append(batch, c)
			default:
				break gather
			}
		}
		cmds = b.exec(batch, cmds[:0])
		for i, c := range batch {
			c.rep, c.err = parse(cmds[i])
			if isNoScript(c.err) { // a restarted server: EVAL loads the script
				c.rep, c.err = b.runOne(context.Background(), c.key, c.args)
			}
			cmds[i] = nil
			c.done <- struct{}{}
		}
	}
}

// exec sends batch in one pipeline, under the limiter's timeout.
func (b *batcher) exec(batch []*call, cmds []*redis.Cmd) []*redis.Cmd {
	ctx := context.Background()
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	pipe := b.client.Pipeline()
	for _, c := range batch {
		cmds = append(cmds, b.script.EvalSha(ctx, pipe, []string{c.key}, c.args...))
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	return cmds
}

// close stops the flushers once they finish their batches.
func (b *batcher) close() {
	b.once.Do(func() { close(b.stop) })
	b.wg.Wait()
}

// alone runs the script for redisKey by itself for a caller that must have
// its answer by ctx's deadline or the limiter's timeout: on the caller's
// goroutine when the client enforces deadlines, else on a goroutine of its
// own that the caller stops waiting for at the deadline.
func (b *batcher) alone(ctx context.Context, redisKey string, args []any) (reply, error) {
	if b.enforced || b.timeout <= 0 && ctx.Done() == nil {
		return b.runOne(ctx, redisKey, args)
	}
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	c := callPool.Get().(*call)
	go func() {
		c.rep, c.err = b.runOne(ctx, redisKey, args)
		c.done <- struct{}{}
	}()
	select {
	case <-c.done:
		rep, err := c.rep, c.err
		c.rep, c.err = reply{}, nil
		callPool.Put(c)
		return rep, err
	case <-ctx.Done():
		return reply{}, ctx.Err() // c is left to its goroutine and the collector
	}
}

// runOne runs the script for redisKey by itself: EVALSHA, and EVAL when the
// server answers NOSCRIPT (after a restart or SCRIPT FLUSH), which also loads
// it for the next calls.
func (b *batcher) runOne(ctx context.Context, redisKey string, args []any) (reply, error) {
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	return parse(b.script.Run(ctx, b.client, []string{redisKey}, args...))
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
