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

// TestServiceLeaseOnCloseAndReplace: a service built with a leasing
// Factory holds a lease on a hot pair. Close gives the unspent requests
// back to Redis, for every algorithm that leases. A Replace after which no
// rule uses the Config closes its limiter, as the service's doc says: its
// lease is given back at once, so that another instance on the same Config
// finds the key's requests free again, and a Replace back to the Config
// leases afresh.
func TestServiceLeaseOnCloseAndReplace(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 20, Window: time.Minute}
			var now atomic.Int64
			now.Store(int64(time.Hour) + 1)
			clocked := hotlimit.WithClock(now.Load)
			other := newExact(t, newClient(t, srv), c, clocked, redislimit.WithPrefix(a.String()+":"))
			newService := func() *service.Service {
				svc, err := service.New(c, clocked, hotlimit.WithFactory(redislimit.Factory(newClient(t, srv),
					redislimit.WithLease(lease, time.Hour), redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix(a.String()+":"))))
				require.NoError(t, err)
				return svc
			}
			key := "1:u|a" // the pair (u, a)
			left := func() int { return take(t, other, key, 0).Remaining }

			svc := newService()
			for range 3 {
				require.True(t, svc.Allow("u", "a"))
			}
			assert.Equal(t, c.Limit-1-lease, left(), "Redis counts the first request and the lease")
			require.NoError(t, svc.Close())
			assert.Equal(t, c.Limit-3, left(), "Close gives back the 3 unspent")

			svc = newService()
			t.Cleanup(func() { _ = svc.Close() })
			require.True(t, svc.Allow("u", "b")) // a lease on the pair (u, b)
			bKey := "1:u|b"
			assert.Equal(t, c.Limit-1-lease, take(t, other, bKey, 0).Remaining)
			changed := c
			changed.Limit++
			require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{changed}}))
			assert.Equal(t, c.Limit-1, take(t, other, bKey, 0).Remaining,
				"the dropped limiter gave its lease back as the Replace closed it")
			require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{c}}))
			require.True(t, svc.Allow("u", "b"))
			assert.Equal(t, c.Limit-2-lease, take(t, other, bKey, 0).Remaining,
				"back on the Config, a new limiter counts its request and leases afresh")
			for i := range c.Limit - 2 - lease {
				require.True(t, other.Allow(bKey), "request %d of the other instance", i)
			}
			assert.False(t, other.Allow(bKey), "the key's limit, less the live lease")
		})
	}
}

// holdReply is a go-redis hook that, for the first command sent by itself
// on key with n > 0, lets Redis run it and then holds its answer until
// release is closed, closing ran first.
type holdReply struct {
	key          string
	ran, release chan struct{}
	once         atomic.Bool
}

func (h *holdReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 4 && args[3] == h.key && fmt.Sprint(args[4]) != "0" && h.once.CompareAndSwap(false, true) {
			close(h.ran)
			<-h.release
		}
		return err
	}
}

func (h *holdReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeaseGrantedDuringCloseIsGivenBack: a call that Redis granted a lease
// while Close ran (its answer comes after Close gave back the leases it
// found) does not strand that lease: it goes back to Redis at once, and the
// closed Limiter takes no lease after, each call a round trip of its own.
func TestLeaseGrantedDuringCloseIsGivenBack(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 20, Window: time.Minute}
	clocked := frozenClock()
	client := newClient(t, srv)
	leased := newExact(t, client, c, clocked, redislimit.WithLease(5, time.Hour))
	other := newExact(t, newClient(t, srv), c, clocked)
	take(t, leased, "warm", 0) // loads the script: the call held is one EVALSHA
	h := &holdReply{key: leased.RedisKey("k"), ran: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(h)

	done := make(chan hotlimit.Decision)
	go func() { done <- take(t, leased, "k", 1) }()
	<-h.ran
	assert.Equal(t, c.Limit-6, take(t, other, "k", 0).Remaining, "Redis took the request and a lease of 5")
	require.NoError(t, leased.Close())
	close(h.release)
	require.True(t, (<-done).Allowed)
	assert.Equal(t, c.Limit-1, take(t, other, "k", 0).Remaining, "the lease granted during Close is given back")
	assert.Zero(t, leased.Len(), "no lease is held")
	require.True(t, take(t, leased, "k", 1).Allowed)
	assert.Equal(t, c.Limit-2, take(t, other, "k", 0).Remaining, "after Close a call takes no lease")
	assert.Zero(t, leased.Len())
}

// cancelAfter is a go-redis hook that, once armed, cancels a context right
// after Redis answered the next command sent by itself on key with n > 0:
// the caller's context ends between Redis's answer and what the call does
// with it.
type cancelAfter struct {
	key    string
	armed  atomic.Bool
	cancel context.CancelFunc
}

func (h *cancelAfter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cancelAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 4 && args[3] == h.key && fmt.Sprint(args[4]) != "0" && h.armed.CompareAndSwap(true, false) {
			h.cancel()
		}
		return err
	}
}

func (h *cancelAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeaseReplacedAsCallerLeavesIsGivenBack: a call that Redis grants a
// new lease retires the key's expired one, giving back its unspent
// requests. When the caller's context ends right after Redis's answer, the
// call still has that answer (it passed, with the new lease), and the old
// lease's unspent requests still go back: Redis counts exactly what was
// spent and what the new lease holds.
func TestLeaseReplacedAsCallerLeavesIsGivenBack(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 5
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 20, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour) + 1)
	clocked := hotlimit.WithClock(now.Load)
	client := newClient(t, srv)
	leased := newExact(t, client, c, clocked, redislimit.WithLease(lease, time.Second))
	other := newExact(t, newClient(t, srv), c, clocked)
	left := func() int { return take(t, other, "k", 0).Remaining }

	require.True(t, take(t, leased, "k", 1).Allowed)
	require.Equal(t, c.Limit-1-lease, left(), "Redis counts the request and the first lease")
	for range 2 {
		require.True(t, take(t, leased, "k", 1).Allowed, "spent from the first lease")
	}
	now.Add(int64(2 * time.Second)) // the first lease expires, 3 unspent; the window goes on

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &cancelAfter{key: leased.RedisKey("k"), cancel: cancel}
	client.AddHook(h)
	h.armed.Store(true)
	d, err := leased.TakeContext(ctx, "k", 1)
	require.NoError(t, err, "Redis answered before the caller's context ended")
	require.True(t, d.Allowed)
	require.False(t, h.armed.Load(), "the caller's context ended after Redis's answer")
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	redislimit.WaitRetired(leased) // the first lease goes back off the caller's path
	assert.Equal(t, c.Limit-(3+1+lease), left(),
		"Redis counts the 3 spent from the first lease, this request and the second lease: the first lease's 3 unspent are back")
	assert.Equal(t, 1, leased.Len(), "the second lease is held")
}

// TestCloseRacingLeasesConserves: 8 goroutines take from one hot key of a
// leasing limiter, spending from its leases and asking Redis for new ones,
// while Close runs once a tenth of the calls are made; the calls go on
// after it. Whatever the interleaving of spends, grants, retirements and
// Close, Redis counts exactly the requests admitted afterwards: no leased
// request is lost or given back twice, and the closed limiter holds no
// lease.
func TestCloseRacingLeasesConserves(t *testing.T) {
	srv := redistest.Start(t)
	workers, calls := 8, 400
	if testing.Short() {
		calls = 100
	}
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: workers * calls * 2, Window: time.Minute}
			clocked := frozenClock()
			prefix := redislimit.WithPrefix("closerace:")
			lim := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(7, time.Hour))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)
			var admitted, made atomic.Int64
			closed := make(chan error, 1)
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range calls {
						if made.Add(1) == int64(workers*calls/10) {
							closed <- lim.Close()
						}
						if d := take(t, lim, "k", 1); d.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, <-closed, "Close gave every lease back")
			assert.EqualValues(t, workers*calls, admitted.Load(), "the limit is far above the calls: every one passes")
			assert.Zero(t, lim.Len(), "the closed limiter holds no lease")
			assert.EqualValues(t, c.Limit-int(admitted.Load()), take(t, other, "k", 0).Remaining,
				"Redis counts exactly the requests admitted")
		})
	}
}
