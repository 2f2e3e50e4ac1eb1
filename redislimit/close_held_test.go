package redislimit_test

import (
	"context"
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

// heldClock is a frozen clock whose next reading, once armed, waits until
// the test lets it go: it stops a decision at the step that reads it.
type heldClock struct {
	now     atomic.Int64
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
}

func newHeldClock() *heldClock {
	c := &heldClock{reached: make(chan struct{}), release: make(chan struct{})}
	c.now.Store(int64(time.Hour))
	return c
}

func (c *heldClock) read() int64 {
	if c.armed.CompareAndSwap(true, false) {
		c.reached <- struct{}{}
		<-c.release
	}
	return c.now.Load()
}

// waitReached waits until an armed reading has begun.
func (c *heldClock) waitReached(t *testing.T) {
	t.Helper()
	select {
	case <-c.reached:
	case <-time.After(exactTimeout):
		require.FailNow(t, "no reading of the clock was held")
	}
}

// TestServiceCloseWhileADecisionIsHeld: a service over a leasing, batching
// Factory is closed while a decision has chosen its limiter and stopped at
// a reading of the clock: before its script is sent, with the key's lease
// claimed (a fresh key), or before it spends from the key's lease. The
// decision then runs on the closed limiter, which decides it in Redis (its
// batcher stopped: a round trip of its own), and passes it: Redis counts
// exactly the requests admitted, the lease granted to the held call or
// the one Close retired given back, and the closed limiter holds no lease.
func TestServiceCloseWhileADecisionIsHeld(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 5
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 20, Window: time.Minute}
	for _, tc := range []struct {
		name   string
		before int // requests admitted before the held one
	}{
		{"claiming the first lease", 0},
		{"spending from a lease", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newHeldClock()
			prefix := redislimit.WithPrefix("closeheld:" + t.Name() + ":")
			other := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.now.Load), prefix)
			var built atomic.Pointer[redislimit.Limiter]
			f := redislimit.Factory(newClient(t, srv), redislimit.WithLease(lease, time.Hour), redislimit.WithTimeout(exactTimeout), prefix)
			factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				l, err := f(c, opts...)
				if rl, ok := l.(*redislimit.Limiter); ok {
					built.Store(rl)
				}
				return l, err
			}
			svc, err := service.New(c, hotlimit.WithClock(clock.read), hotlimit.WithFactory(factory))
			require.NoError(t, err)
			for range tc.before {
				require.True(t, svc.Allow("u", "a"))
			}

			clock.armed.Store(true)
			passed := make(chan bool)
			go func() { passed <- svc.Allow("u", "a") }()
			clock.waitReached(t)
			require.NoError(t, svc.Close())
			close(clock.release)
			assert.True(t, <-passed, "the closed limiter decides in Redis, and admits")

			admitted := tc.before + 1
			assert.Equal(t, c.Limit-admitted, take(t, other, "1:u|a", 0).Remaining, "Redis counts exactly the requests admitted")
			assert.Zero(t, built.Load().Len(), "the closed limiter holds no lease")
			assert.True(t, svc.Allow("u", "a"), "it goes on deciding in Redis")
			assert.Equal(t, c.Limit-admitted-1, take(t, other, "1:u|a", 0).Remaining, "with no lease")
		})
	}
}

// heldTake is a limiter on Redis whose next take with a context waits,
// once armed, until the test lets it go: a rule's limit about to decide.
type heldTake struct {
	*redislimit.Limiter
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
}

func (l *heldTake) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if l.armed.CompareAndSwap(true, false) {
		l.reached <- struct{}{}
		<-l.release
	}
	return l.Limiter.TakeReceiptContext(ctx, key, n)
}

// TestServiceCloseBetweenARulesTakeAndItsRefund: under a rule of two
// limits on Redis, the first (leasing) has taken and the second (spent) is
// about to deny when Close runs, which gives the first's lease back. The
// denial then gives the first's request back to its limiter, closed: Redis
// counts none of it, and the closed limiter holds no lease.
func TestServiceCloseBetweenARulesTakeAndItsRefund(t *testing.T) {
	srv := redistest.Start(t)
	x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 20, Window: time.Minute}
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
	prefix := redislimit.WithPrefix("closerule:")
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clocked := hotlimit.WithClock(now.Load)
	other := newExact(t, newClient(t, srv), x, clocked, prefix)
	f := redislimit.Factory(newClient(t, srv), redislimit.WithLease(5, time.Hour), redislimit.WithTimeout(exactTimeout), prefix)
	second := &heldTake{reached: make(chan struct{}), release: make(chan struct{})}
	var first atomic.Pointer[redislimit.Limiter]
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := f(c, opts...)
		if err != nil {
			return nil, err
		}
		rl := l.(*redislimit.Limiter)
		if c.Algorithm == y.Algorithm {
			second.Limiter = rl
			return second, nil
		}
		first.Store(rl)
		return rl, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{x, y}}, clocked, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.True(t, svc.Allow("u", "spend"), "spends the user's one request of y")

	second.armed.Store(true)
	type result struct {
		d   hotlimit.Decision
		err error
	}
	done := make(chan result)
	go func() {
		d, err := svc.TakeContext(context.Background(), "u", "e", 1)
		done <- result{d, err}
	}()
	select {
	case <-second.reached: // x took, with a lease; y about to deny
	case <-time.After(exactTimeout):
		require.FailNow(t, "y's take was not held")
	}
	require.NoError(t, svc.Close())
	close(second.release)
	r := <-done
	require.NoError(t, r.err, "Redis decided every limit")
	assert.False(t, r.d.Allowed, "y denies")
	assert.Equal(t, x.Limit, take(t, other, "1:u|e", 0).Remaining, "Redis counts nothing of the denied request, nor of the lease")
	assert.Zero(t, first.Load().Len(), "the closed limiter holds no lease")
}
