package redislimit_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestDroppedLimiterCollectedAfterCanceledCalls: Limiters dropped without
// Close are collected, and their batchers' flushers stop, even after concurrent
// calls whose contexts had ended, some of which leave before their batch
// is sent. (Such a call holds its Limiter; the flushers must not keep one
// reachable from an earlier batch, or the Limiter, and its flushers, stay
// forever.)
func TestDroppedLimiterCollectedAfterCanceledCalls(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, client.Ping(context.Background()).Err())
	base := runtime.NumGoroutine()
	var dropped []weak.Pointer[redislimit.Limiter]
	for _, a := range algorithms {
		func() {
			l, err := redislimit.New(client, hotlimit.Config{Algorithm: a, Limit: 1000, Window: time.Minute},
				redislimit.WithBatch(64, 2), redislimit.WithTimeout(exactTimeout), redislimit.WithFailPolicy(redislimit.FailOpen))
			require.NoError(t, err)
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := range 100 {
						if (w+i)%2 == 0 {
							_, _ = l.TakeContext(canceled, "k", 1)
						} else {
							l.Allow("k")
						}
					}
				})
			}
			wg.Wait()
			dropped = append(dropped, weak.Make(l))
		}()
	}
	assert.Eventually(t, func() bool {
		runtime.GC()
		for _, p := range dropped {
			if p.Value() != nil {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every dropped Limiter is collected")
	// Two flushers per Limiter, ten in all, were running; one goroutine of
	// the client's or the runtime's may come and go.
	assert.Eventually(t, func() bool {
		return runtime.NumGoroutine() <= base+1
	}, 10*time.Second, 10*time.Millisecond, "their flushers stop")
}
