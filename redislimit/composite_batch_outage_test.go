package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestCompositeBatchOutageMatchesOneByOne: while Redis is down, composites
// whose children on Redis are asked together (a composite in a composite
// in a composite among them, children in memory before and after) decide
// as their twins asking every child in turn, for each failure policy, with
// and without a context, n within and beyond a capacity: the same
// decisions, receipts, errors, fallbacks (as many, with the same reasons,
// the breakers opening at the same request, and probing at the same one
// once their cooldown is over) and, after, the same state of
// every child, FailLocal's in-process limiters among them.
func TestCompositeBatchOutageMatchesOneByOne(t *testing.T) {
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	client := deadClient(t)
	kids := append([][]kid{{
		inMemory(hotlimit.TokenBucket, 3),
		onRedis(hotlimit.FixedWindow, 4),
		{kids: []kid{
			onRedis(hotlimit.TokenBucket, 5),
			{kids: []kid{onRedis(hotlimit.GCRA, 20), onRedis(hotlimit.FixedWindow, 6), inMemory(hotlimit.FixedWindow, 4)}},
		}},
		onRedis(hotlimit.SlidingCounter, 6),
		inMemory(hotlimit.FixedWindow, 2),
	}}, compositeKids...)
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for i, kids := range kids {
			for _, withCtx := range []bool{true, false} {
				name := fmt.Sprintf("%v composite %d ctx=%v", policy, i, withCtx)
				bobs, sobs := &fallbackLog{}, &fallbackLog{}
				opts := []hotlimit.Option{redislimit.WithFailPolicy(policy), redislimit.WithBreaker(3, time.Hour), redislimit.WithTimeout(exactTimeout)}
				wb := &compositeTwins{t: t, client: client, clock: func() int64 { return int64(time.Hour) },
					opts: append(opts, hotlimit.WithObserver(bobs))}
				ws := &compositeTwins{t: t, client: client, clock: func() int64 { return int64(time.Hour) },
					opts: append(opts, hotlimit.WithObserver(sobs))}
				b, bLeaves := wb.build(false, kids)
				s, sLeaves := ws.build(true, kids)
				for step, n := range []int{1, 2, 1, 30, 1, 1, 1, 1} {
					what := fmt.Sprintf("%s: step %d", name, step)
					if step == 5 {
						breakerNow.Add(int64(2 * time.Hour)) // the cooldown is over: a probe
					}
					if !withCtx {
						bd, br := b.TakeReceipt("zed", n)
						sd, sr := s.TakeReceipt("zed", n)
						require.Equal(t, sd, bd, what)
						require.Equal(t, sr, br, what)
						continue
					}
					bd, br, berr := b.TakeReceiptContext(context.Background(), "zed", n)
					sd, sr, serr := s.TakeReceiptContext(context.Background(), "zed", n)
					require.Equal(t, sd, bd, what)
					require.Equal(t, sr, br, what)
					require.Equal(t, serr != nil, berr != nil, what)
					assert.Equal(t, errors.Is(serr, redislimit.ErrBreakerOpen), errors.Is(berr, redislimit.ErrBreakerOpen), what)
					assert.Equal(t, composite.DecidingError(serr) == nil, composite.DecidingError(berr) == nil, what)
				}
				require.Equal(t, fallbackReasons(sobs), fallbackReasons(bobs), name)
				for j := range sLeaves {
					assert.Equal(t, sLeaves[j].Take("zed", 0), bLeaves[j].Take("zed", 0), "%s: leaf %d", name, j)
				}
			}
		}
	}
}

// TestCompositeBatchCanceledBeforeTurnMatchesOneByOne: while Redis is
// down, a request whose context ends once the first call to Redis is back
// (the batch, or the twin's first child's call) is decided as its twin
// decides it: the first child on Redis by its failure policy with Redis's
// error, the others, asked in turn, with the context's; the same
// decisions, receipts and fallbacks, for each failure policy.
func TestCompositeBatchCanceledBeforeTurnMatchesOneByOne(t *testing.T) {
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for i, kids := range compositeKids {
			name := fmt.Sprintf("%v composite %d", policy, i)
			client := deadClient(t)
			hook := &cancelAfterFirst{}
			client.AddHook(hook)
			bobs, sobs := &fallbackLog{}, &fallbackLog{}
			opts := []hotlimit.Option{redislimit.WithFailPolicy(policy), redislimit.WithBreaker(3, time.Hour), redislimit.WithTimeout(exactTimeout)}
			wb := &compositeTwins{t: t, client: client, clock: func() int64 { return int64(time.Hour) },
				opts: append(opts, hotlimit.WithObserver(bobs))}
			ws := &compositeTwins{t: t, client: client, clock: func() int64 { return int64(time.Hour) },
				opts: append(opts, hotlimit.WithObserver(sobs))}
			b, _ := wb.build(false, kids)
			s, _ := ws.build(true, kids)
			for step := range 3 {
				what := fmt.Sprintf("%s: step %d", name, step)
				ctx := hook.arm()
				sd, sr, serr := s.TakeReceiptContext(ctx, "zed", 1)
				ctx = hook.arm()
				bd, br, berr := b.TakeReceiptContext(ctx, "zed", 1)
				require.Equal(t, sd, bd, what)
				require.Equal(t, sr, br, what)
				require.Equal(t, serr != nil, berr != nil, what)
			}
			require.Equal(t, fallbackReasons(sobs), fallbackReasons(bobs), name)
		}
	}
}
