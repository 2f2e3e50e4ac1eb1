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
	"github.com/hotlimit/hotlimit/service"
)

// pipeHold holds the next script call, or pipeline of them, once armed: before
// sending it, it calls before (when set); once Redis has run it, it closes
// ran and waits for release before its answers go back. Pipelines that
// carry no script (a new connection's handshake) pass.
type pipeHold struct {
	armed   atomic.Bool
	before  func()
	ran     chan struct{}
	release chan struct{}
}

func newPipeHold() *pipeHold {
	return &pipeHold{ran: make(chan struct{}), release: make(chan struct{})}
}

func (h *pipeHold) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *pipeHold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isScript(cmd) || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmd)
		}
		return h.hold(func() error { return next(ctx, cmd) })
	}
}

func (h *pipeHold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if countScripts(cmds) == 0 || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmds)
		}
		return h.hold(func() error { return next(ctx, cmds) })
	}
}

// hold runs the held call.
func (h *pipeHold) hold(call func() error) error {
	if h.before != nil {
		h.before()
	}
	err := call()
	close(h.ran)
	<-h.release
	return err
}

// TestServiceBatchConcurrentNeverOverAdmits: goroutines taking at once, on
// a frozen clock, from rules of two and three limits on Redis asked
// together, each until it is denied, admit no more than the least
// capacity of the limits they share, and no fewer than that less one
// request per other goroutine (or, when each goroutine's own limit denies
// it first, exactly what their own limits hold):
// a request denied by one limit holds what the others took until it gives
// it back, which may deny a concurrent request that fits (see
// TestServiceBatchSpeculativeHoldDenies), never more than one request
// each. Once they are done nothing is lost: the requests admitted then
// fill the least capacity exactly, the requests that a goroutine's own
// limit denied given back to the global one.
func TestServiceBatchConcurrentNeverOverAdmits(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	rules := service.Rules{
		Default: service.Limits{
			{Algorithm: hotlimit.TokenBucket, Limit: 13, Window: time.Minute},
			{Algorithm: hotlimit.FixedWindow, Limit: 11, Window: time.Minute, Scope: hotlimit.PerAPI},
		},
		APIs: map[string]service.Limits{
			"POST /three": {
				{Algorithm: hotlimit.GCRA, Limit: 17, Window: time.Minute, Scope: hotlimit.PerAPI},
				{Algorithm: hotlimit.SlidingCounter, Limit: 12, Window: time.Minute, Scope: hotlimit.Global},
				{Algorithm: hotlimit.FixedWindow, Limit: 14, Window: time.Minute, Scope: hotlimit.Global},
			},
			// Each goroutine's own limit denies it, never the global
			// one, which has room for every goroutine's requests and
			// for one more each: it took the request that its own limit
			// denies, and gives it back.
			"POST /own": {
				{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Scope: hotlimit.PerUser},
				{Algorithm: hotlimit.TokenBucket, Limit: 20, Window: time.Minute, Scope: hotlimit.Global},
			},
		},
	}
	const G = 6
	for _, tc := range []struct {
		api   string
		least int // the least capacity of the limits the goroutines share
		own   int // the capacity of each goroutine's own limit, if any
	}{{"GET /two", 11, 0}, {"POST /three", 12, 0}, {"POST /own", 20, 2}} {
		t.Run(tc.api, func(t *testing.T) {
			svc, err := service.NewFromRules(rules, frozenClock(),
				hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix(tc.api))))
			require.NoError(t, err)
			t.Cleanup(func() { _ = svc.Close() })
			var admitted atomic.Int64
			start := make(chan struct{})
			var wg sync.WaitGroup
			for g := range G {
				wg.Go(func() {
					<-start
					for {
						d, err := svc.TakeContext(context.Background(), fmt.Sprint("user", g), tc.api, 1)
						if !assert.NoError(t, err) || !d.Allowed {
							return
						}
						admitted.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			got := int(admitted.Load())
			assert.LessOrEqual(t, got, tc.least, "never more than the least capacity")
			if tc.own == 0 {
				assert.GreaterOrEqual(t, got, tc.least-(G-1), "short of it by at most one request of each other goroutine")
			} else {
				assert.Equal(t, G*tc.own, got, "each goroutine's own limit")
			}
			for i := 0; ; i++ { // users whose own limit is fresh
				d, err := svc.TakeContext(context.Background(), fmt.Sprint("fresh", i), tc.api, 1)
				require.NoError(t, err)
				if !d.Allowed {
					break
				}
				got++
			}
			assert.Equal(t, tc.least, got, "what the others held is back")
		})
	}
}

// TestServiceBatchSpeculativeHoldDenies shows the cost of asking a rule's
// limits together: a request that one limit denies has taken from the
// others meanwhile, and a concurrent request that fits may find them full,
// where the limits asked in turn would never have asked them for it. Here
// ann spent her own limit; her next request, held once Redis has run it,
// holds the global one's last request, and bob's request is denied. Once
// ann's is given back, bob's passes: the global limit lost nothing. Asked
// in turn, ann's request never reaches the global limit, and bob's passes
// while hers is held.
func TestServiceBatchSpeculativeHoldDenies(t *testing.T) {
	srv := redistest.Start(t)
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Scope: hotlimit.Global},
	}}
	for _, together := range []bool{true, false} {
		t.Run(map[bool]string{true: "together", false: "in turn"}[together], func(t *testing.T) {
			client := newClient(t, srv)
			hold := newPipeHold()
			client.AddHook(hold)
			opts := []hotlimit.Option{redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix(t.Name())}
			f := redislimit.Factory(client, opts...)
			if !together {
				f = oneByOneFactory(client, opts...)
			}
			svc, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(f))
			require.NoError(t, err)
			t.Cleanup(func() { _ = svc.Close() })
			ctx := context.Background()
			d, err := svc.TakeContext(ctx, "ann", "GET /a", 1) // her own limit spent, the global one half
			require.NoError(t, err)
			require.True(t, d.Allowed)
			hold.armed.Store(true)
			annDone := make(chan hotlimit.Decision, 1)
			go func() {
				d, err := svc.TakeContext(ctx, "ann", "GET /a", 1)
				assert.NoError(t, err)
				annDone <- d
			}()
			<-hold.ran
			bob, err := svc.TakeContext(ctx, "bob", "GET /a", 1)
			require.NoError(t, err)
			close(hold.release)
			require.False(t, (<-annDone).Allowed, "ann spent her own limit")
			if !together {
				assert.True(t, bob.Allowed, "ann's request never took from the global limit")
				return
			}
			assert.False(t, bob.Allowed, "ann's request held the global limit's last request")
			bob, err = svc.TakeContext(ctx, "bob", "GET /a", 1)
			require.NoError(t, err)
			assert.True(t, bob.Allowed, "ann's request gave it back")
		})
	}
}
