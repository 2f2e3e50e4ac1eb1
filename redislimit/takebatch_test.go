package redislimit_test

import (
	"context"
	"io"
	"strings"
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

// oneByOne is a redislimit Limiter without its TakeBatch: not a
// hotlimit.Batcher, so a service rule asks it on its own, one round trip
// after another, as it asks any other limiter.
type oneByOne struct {
	hotlimit.ContextRefunder
	config hotlimit.Config
}

func (o oneByOne) Config() hotlimit.Config { return o.config }
func (o oneByOne) Close() error            { return o.ContextRefunder.(io.Closer).Close() }

// scriptTrips counts a client's round trips that run scripts, by
// themselves and in pipelines, leaving out those of a new connection's
// handshake, and the script calls they held.
type scriptTrips struct {
	singles, pipelines, scripts atomic.Int64
}

func (r *scriptTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *scriptTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) {
			r.singles.Add(1)
			r.scripts.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (r *scriptTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if n := countScripts(cmds); n > 0 {
			r.pipelines.Add(1)
			r.scripts.Add(int64(n))
		}
		return next(ctx, cmds)
	}
}

func countScripts(cmds []redis.Cmder) int {
	n := 0
	for _, c := range cmds {
		if isScript(c) {
			n++
		}
	}
	return n
}

func isScript(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	return name == "evalsha" || name == "eval"
}

// TestTakeBatchDecidesOthersAlone: TakeBatch decides the takes of
// redislimit's limiters as TakeAll does, in one round trip, and any other
// take by its own limiter; a take without a Limiter gets an error.
func TestTakeBatchDecidesOthersAlone(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Hour}
	a := newExact(t, client, c, redislimit.WithPrefix("a:"))
	b := newExact(t, client, c, redislimit.WithPrefix("b:"))
	other := newExact(t, client, c, redislimit.WithPrefix("other:"))
	for _, l := range []*redislimit.Limiter{a, b, other} {
		take(t, l, "warm", 0) // loads the script, opens a connection
	}
	takes := []hotlimit.BatchTake{
		{Limiter: a, Key: "k", N: 1},
		{Limiter: oneByOne{ContextRefunder: other}, Key: "k", N: 2},
		{Key: "k", N: 1},
		{Limiter: b, Key: "k", N: 3},
	}
	pipelines, singles := trips.pipelines.Load(), trips.singles.Load()
	b.TakeBatch(context.Background(), takes) // b's own take is not the first
	assert.Equal(t, pipelines+1, trips.pipelines.Load(), "one round trip for a and b")
	assert.Equal(t, singles+1, trips.singles.Load(), "and one of other's own")
	require.NoError(t, takes[0].Err)
	assert.True(t, takes[0].Decision.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 1, At: takes[0].Receipt.At}, takes[0].Receipt)
	require.NoError(t, takes[1].Err)
	assert.True(t, takes[1].Decision.Allowed, "by itself")
	assert.Equal(t, 0, takes[1].Decision.Remaining)
	assert.ErrorIs(t, takes[2].Err, hotlimit.ErrInvalidConfig)
	assert.False(t, takes[2].Decision.Allowed)
	require.NoError(t, takes[3].Err)
	assert.False(t, takes[3].Decision.Allowed, "3 of 2")
	assert.Equal(t, hotlimit.Receipt{}, takes[3].Receipt)
	assert.Equal(t, 1, take(t, a, "k", 0).Remaining)
	assert.Equal(t, 2, take(t, b, "k", 0).Remaining)
	assert.Equal(t, 0, take(t, other, "k", 0).Remaining)
}

// TestBatchesOnlyWhatSharesTheTrip: Batches reports that TakeBatch sends a
// take with the batcher's own only for a Limiter on its client, with its
// timeout, neither with a lease, on a client that enforces deadlines.
func TestBatchesOnlyWhatSharesTheTrip(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Hour}
	a := newExact(t, client, c, redislimit.WithPrefix("a:"))
	b := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 3, Window: time.Hour}, redislimit.WithPrefix("b:"))
	leased := newExact(t, client, c, redislimit.WithPrefix("leased:"), redislimit.WithLease(2, time.Minute))
	slower := newLimiter(t, client, c, redislimit.WithPrefix("slower:"), redislimit.WithTimeout(time.Minute))
	elsewhere := newExact(t, newClient(t, srv), c)
	loose := redis.NewClient(&redis.Options{Addr: srv.Addr}) // no ContextTimeoutEnabled
	t.Cleanup(func() { _ = loose.Close() })
	unbounded := newExact(t, loose, c)
	assert.True(t, a.Batches(a))
	assert.True(t, a.Batches(b))
	assert.True(t, b.Batches(a))
	assert.False(t, a.Batches(leased), "a lease decides by itself")
	assert.False(t, leased.Batches(leased))
	assert.False(t, leased.Batches(a))
	assert.False(t, a.Batches(slower), "another timeout")
	assert.False(t, a.Batches(elsewhere), "another client")
	assert.False(t, unbounded.Batches(unbounded), "a client that does not enforce deadlines")
	assert.False(t, a.Batches(oneByOne{ContextRefunder: b}), "not a Limiter")
	assert.False(t, a.Batches(nil))
	assert.False(t, a.Batches((*redislimit.Limiter)(nil)))
}
