package redislimit

import (
	"context"
	"fmt"

	"github.com/hotlimit/hotlimit"
	"github.com/redis/go-redis/v9"
)

// Take is one decision of [TakeAll]: N requests from Key under Limiter, and
// what TakeReceiptContext would return for them.
type Take struct {
	Limiter *Limiter
	Key     string
	N       int

	// Decision, Receipt and Err are set by TakeAll.
	Decision hotlimit.Decision
	Receipt  hotlimit.Receipt
	Err      error
}

// TakeAll decides every take as [Limiter.TakeReceiptContext] would, each
// independently of the others, in one round trip: the script calls of
// every take whose Limiter shares the first one's client and timeout go to
// Redis in one pipeline, sent and answered by the calling goroutine, as the
// several limits of one request (the descriptors of an Envoy rate limit
// request) would be. A take whose Limiter has a lease (see [WithLease]),
// another client or timeout than the first, or a client without
// ContextTimeoutEnabled (whose pipeline could outlast the timeout), is
// decided by itself, after the pipeline.
// Every take's Decision, Receipt and Err are set; Err and the failure
// policy's Decision when Redis fails, as in TakeReceiptContext. A nil
// Limiter's take gets an error wrapping [hotlimit.ErrInvalidConfig].
func TakeAll(ctx context.Context, takes []Take) {
	var first *Limiter
	var pipe redis.Pipeliner
	var args [][]any
	var cmds []*redis.Cmd
	var piped []int
	var alone []int
	for i := range takes {
		t := &takes[i]
		l := t.Limiter
		switch {
		case l == nil:
			t.Decision, t.Receipt, t.Err = hotlimit.Decision{}, hotlimit.Receipt{}, errNilLimiter
			continue
		case l.leases != nil, !l.batch.enforced,
			first != nil && (l.client != first.client || l.set.timeout != first.set.timeout):
			alone = append(alone, i)
			continue
		}
		if !l.breaker.allow() {
			t.Decision, t.Receipt, t.Err = l.fail(t.Key, t.N, ErrBreakerOpen)
			continue
		}
		a, err := l.args(int64(t.N), 0, 0, 0)
		if err != nil {
			t.Decision, t.Receipt, t.Err = l.settle(ctx, t.Key, t.N, reply{}, err)
			continue
		}
		if first == nil {
			first, pipe = l, l.client.Pipeline()
		}
		args = append(args, a)
		cmds = append(cmds, l.script.EvalSha(ctx, pipe, []string{l.redisKey(t.Key)}, a...))
		piped = append(piped, i)
	}
	if pipe != nil {
		pctx := ctx
		if first.set.timeout > 0 {
			var cancel context.CancelFunc
			pctx, cancel = context.WithTimeout(ctx, first.set.timeout)
			defer cancel()
		}
		_, _ = pipe.Exec(pctx) // each command holds its own error
		for j, i := range piped {
			t := &takes[i]
			l := t.Limiter
			rep, err := parse(cmds[j])
			if isNoScript(err) { // a restarted server: EVAL loads the script
				rep, err = l.batch.runOne(ctx, l.redisKey(t.Key), args[j])
			}
			t.Decision, t.Receipt, t.Err = l.settle(ctx, t.Key, t.N, rep, err)
		}
	}
	for _, i := range alone {
		t := &takes[i]
		t.Decision, t.Receipt, t.Err = t.Limiter.take(ctx, t.Key, t.N)
	}
}

var errNilLimiter = fmt.Errorf("redislimit: a Take without a Limiter: %w", hotlimit.ErrInvalidConfig)
