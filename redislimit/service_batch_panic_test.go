package redislimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceBatchHookPanicGivesBack: when a limit's own hook panics on its
// failure policy's decision (here, its key is a list, someone else's)
// while the other limit, before or after it, took the request in the same
// round trip, that limit gives it back, and the panic goes on, as when the
// limits are asked in turn: a request that was never decided counts
// nowhere.
func TestServiceBatchHookPanicGivesBack(t *testing.T) {
	srv := redistest.Start(t)
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute}
	for _, together := range []bool{true, false} {
		for spoilt := range 2 {
			name := fmt.Sprintf("%s/limit %d spoilt", map[bool]string{true: "together", false: "in turn"}[together], spoilt)
			t.Run(name, func(t *testing.T) {
				client := newClient(t, srv)
				var armed atomic.Bool
				hook := redislimit.WithHook(func(redislimit.Event) {
					if armed.CompareAndSwap(true, false) {
						panic("hook")
					}
				})
				opts := []hotlimit.Option{redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix(t.Name()), hook}
				f := redislimit.Factory(client, opts...)
				if !together {
					f = oneByOneFactory(client, opts...)
				}
				limits := service.Limits{bucket, window}
				if spoilt == 0 {
					limits = service.Limits{window, bucket}
				}
				svc, err := service.NewFromRules(service.Rules{Default: limits}, frozenClock(), hotlimit.WithFactory(f))
				require.NoError(t, err)
				t.Cleanup(func() { _ = svc.Close() })
				// The limits' keys, read and spoilt by limiters of their own.
				other := newExact(t, client, bucket, frozenClock(), redislimit.WithPrefix(t.Name()))
				spoil := newExact(t, client, window, frozenClock(), redislimit.WithPrefix(t.Name()))
				const key = "3:zed|GET /a"
				require.NoError(t, client.RPush(context.Background(), spoil.RedisKey(key), "a list").Err())

				armed.Store(true)
				require.PanicsWithValue(t, "hook", func() { _, _ = svc.TakeContext(context.Background(), "zed", "GET /a", 2) })
				assert.Equal(t, bucket.Limit, take(t, other, key, 0).Remaining, "the bucket holds nothing of the request")
			})
		}
	}
}

// panickyTaker is a limiter whose takes under a context panic.
type panickyTaker struct{ hotlimit.ContextRefunder }

func (panickyTaker) TakeReceiptContext(context.Context, string, int) (hotlimit.Decision, hotlimit.Receipt, error) {
	panic("panicky: take")
}

// TestTakeBatchPanicGivesBack: a take of TakeBatch decided by its own
// limiter that panics leaves nothing taken by the takes sent before it to
// Redis, and the panic goes on.
func TestTakeBatchPanicGivesBack(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour}
	a := newExact(t, client, c, redislimit.WithPrefix("a:"))
	b := newExact(t, client, c, redislimit.WithPrefix("b:"))
	takes := []hotlimit.BatchTake{
		{Limiter: a, Key: "k", N: 2},
		{Limiter: panickyTaker{b}, Key: "k", N: 1},
		{Limiter: b, Key: "k", N: 3},
	}
	require.PanicsWithValue(t, "panicky: take", func() { a.TakeBatch(context.Background(), takes) })
	assert.Equal(t, 5, take(t, a, "k", 0).Remaining, "a's take given back")
	assert.Equal(t, 5, take(t, b, "k", 0).Remaining, "b's take given back")
}

// TestTakeAllPanicGivesBack: when a take's hook panics on its failure
// policy's decision, TakeAll gives back what the takes before and after it
// took in the same round trip, and the panic goes on.
func TestTakeAllPanicGivesBack(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour}
	a := newExact(t, client, c, redislimit.WithPrefix("a:"))
	b := newExact(t, client, c, redislimit.WithPrefix("b:"))
	spoilt := newExact(t, client, c, redislimit.WithPrefix("spoilt:"), redislimit.WithHook(func(redislimit.Event) { panic("hook") }))
	require.NoError(t, client.RPush(context.Background(), spoilt.RedisKey("k"), "a list").Err())
	takes := []redislimit.Take{{Limiter: a, Key: "k", N: 2}, {Limiter: spoilt, Key: "k", N: 1}, {Limiter: b, Key: "k", N: 3}}
	require.PanicsWithValue(t, "hook", func() { redislimit.TakeAll(context.Background(), takes) })
	assert.Equal(t, 5, take(t, a, "k", 0).Remaining, "a's take given back")
	assert.Equal(t, 5, take(t, b, "k", 0).Remaining, "b's take given back")
}
