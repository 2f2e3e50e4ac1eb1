package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestTakeAllGivesBackFirst: a take of TakeAll with a GiveBack gives it
// back, then decides the take, in the same pipeline as the other takes (a
// report in the give-back's own script call):
// under limiters of every algorithm, exactly what RefundContext and then
// TakeReceiptContext decide on twin limiters (another prefix and client,
// the same stepped clock), receipts included.
func TestTakeAllGivesBackFirst(t *testing.T) {
	srv := redistest.Start(t)
	client, twins := newClient(t, srv), newClient(t, srv)
	var trips roundTrips
	client.AddHook(&trips)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	var batched, single []*redislimit.Limiter
	for i, a := range algorithms {
		c := hotlimit.Config{Algorithm: a, Limit: 4 + i, Window: time.Minute}
		batched = append(batched, newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("all:")))
		single = append(single, newExact(t, twins, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("one:")))
	}
	var warm []redislimit.Take // loads the scripts, opens the connection
	for _, l := range batched {
		warm = append(warm, redislimit.Take{Limiter: l, Key: "warm"})
	}
	redislimit.TakeAll(context.Background(), warm)
	rng := rand.New(rand.NewPCG(5, 8))
	held := make([][2]hotlimit.Receipt, len(batched)) // each limiter's last receipt, batched and single
	gaveBack, reports := 0, 0
	for step := range 40 {
		var takes []redislimit.Take
		for i, l := range batched {
			tk := redislimit.Take{Limiter: l, Key: "k", N: rng.IntN(3)}
			if rng.IntN(2) == 0 {
				tk.GiveBack = held[i][0]
			}
			takes = append(takes, tk)
		}
		pipelines, piped, singles := trips.pipelines.Load(), trips.piped.Load(), trips.singles.Load()
		redislimit.TakeAll(context.Background(), takes)
		backs := 0
		for i, tk := range takes {
			what := fmt.Sprintf("step %d: %v n=%d, giving back %+v", step, batched[i].Config().Algorithm, tk.N, tk.GiveBack)
			require.NoError(t, tk.Err, what)
			require.NoError(t, tk.GiveBackErr, what)
			if tk.GiveBack.N > 0 {
				gaveBack++
				if tk.N != 0 {
					backs++
				} else {
					reports++ // the give-back's call is the report's
				}
				require.NoError(t, single[i].RefundContext(context.Background(), "k", held[i][1]), what)
			}
			d, r, err := single[i].TakeReceiptContext(context.Background(), "k", tk.N)
			require.NoError(t, err, what)
			require.Equal(t, d, tk.Decision, what)
			require.Equal(t, r, tk.Receipt, what)
			held[i] = [2]hotlimit.Receipt{tk.Receipt, r}
		}
		assert.Equal(t, pipelines+1, trips.pipelines.Load(), "step %d: one pipeline", step)
		assert.Equal(t, piped+int64(len(takes)+backs), trips.piped.Load(), "step %d: of every take and give-back", step)
		assert.Equal(t, singles, trips.singles.Load(), "step %d: and nothing else", step)
		clock.Add(rng.Int64N(int64(20 * time.Second)))
	}
	assert.Greater(t, gaveBack, 40, "receipts were given back")
	assert.Greater(t, reports, 10, "reports were made after give-backs")
}

// TestTakeAllGivesBackAlone: the GiveBack of a take that TakeAll does not
// pipeline with the first (a leased limiter, another client) is given back
// by itself before its take, and that of a take without a Limiter gets an
// error.
func TestTakeAllGivesBackAlone(t *testing.T) {
	srv := redistest.Start(t)
	client, other := newClient(t, srv), newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Hour}
	plain := newExact(t, client, c, frozenClock())
	leased := newExact(t, client, c, frozenClock(), redislimit.WithLease(2, time.Minute), redislimit.WithPrefix("lease:"))
	elsewhere := newExact(t, other, c, frozenClock(), redislimit.WithPrefix("other:"))
	var receipts []hotlimit.Receipt
	for _, l := range []*redislimit.Limiter{plain, leased, elsewhere} {
		_, r, err := l.TakeReceiptContext(context.Background(), "k", 4)
		require.NoError(t, err)
		require.Equal(t, 4, r.N)
		receipts = append(receipts, r)
	}
	takes := []redislimit.Take{
		{Limiter: plain, Key: "k", N: 1, GiveBack: receipts[0]},
		{Limiter: leased, Key: "k", N: 1, GiveBack: receipts[1]},
		{Limiter: elsewhere, Key: "k", N: 1, GiveBack: receipts[2]},
		{Key: "k", N: 1, GiveBack: receipts[0]},
	}
	redislimit.TakeAll(context.Background(), takes)
	for i, tk := range takes[:3] {
		require.NoError(t, tk.Err, "take %d", i)
		require.NoError(t, tk.GiveBackErr, "take %d", i)
		assert.True(t, tk.Decision.Allowed, "take %d: the give-back made room", i)
	}
	assert.ErrorIs(t, takes[3].GiveBackErr, hotlimit.ErrInvalidConfig)
	assert.ErrorIs(t, takes[3].Err, hotlimit.ErrInvalidConfig)
	assert.Equal(t, 3, take(t, plain, "k", 0).Remaining)
	assert.Equal(t, 3, take(t, elsewhere, "k", 0).Remaining)
}

// TestTakeAllGiveBackOutlivesItsContext: a TakeAll that gives back runs
// under its context without the cancellation, as RefundContext's callers
// give back: with the context already ended, the receipt is given back
// all the same, and the report sent with it is answered.
func TestTakeAllGiveBackOutlivesItsContext(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour}
	a := newExact(t, client, c, frozenClock(), redislimit.WithPrefix("a:"))
	b := newExact(t, client, c, frozenClock(), redislimit.WithPrefix("b:"))
	_, r, err := a.TakeReceiptContext(context.Background(), "k", 3)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	takes := []redislimit.Take{{Limiter: a, Key: "k", GiveBack: r}, {Limiter: b, Key: "k", Ahead: true}}
	redislimit.TakeAll(ctx, takes)
	for i, tk := range takes {
		require.NoError(t, tk.GiveBackErr, "take %d", i)
		require.NoError(t, tk.Err, "take %d", i)
		assert.Equal(t, 4, tk.Decision.Remaining, "take %d", i)
	}
	assert.Equal(t, 4, take(t, a, "k", 0).Remaining)
}

// TestTakeAllGiveBackRedisDown: with nothing listening, a GiveBack gets
// Redis's error, as RefundContext's would, and a take asked ahead is left
// undecided.
func TestTakeAllGiveBackRedisDown(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour}
	a := newLimiter(t, client, c, redislimit.WithFailPolicy(redislimit.FailOpen), redislimit.WithPrefix("a:"))
	b := newLimiter(t, client, c, redislimit.WithFailPolicy(redislimit.FailOpen), redislimit.WithPrefix("b:"))
	r := hotlimit.Receipt{N: 2, At: int64(time.Hour)}
	takes := []redislimit.Take{{Limiter: a, Key: "k", GiveBack: r}, {Limiter: b, Key: "k", N: 1, GiveBack: r, Ahead: true}}
	redislimit.TakeAll(context.Background(), takes)
	for i, tk := range takes {
		require.Error(t, tk.GiveBackErr, "take %d", i)
		assert.False(t, errors.Is(tk.GiveBackErr, hotlimit.ErrInvalidConfig), "take %d: %v", i, tk.GiveBackErr)
		assert.Equal(t, hotlimit.Receipt{}, tk.Receipt, "take %d", i)
	}
	require.Error(t, takes[0].Err)
	assert.True(t, takes[0].Decision.Allowed, "FailOpen decides the take in its turn")
	assert.ErrorIs(t, takes[1].Err, hotlimit.ErrNotDecided)
}

// panicTrio returns, on a fresh redis-server, limiters a and b of c (a
// fixed window of 5 an hour) on a frozen clock, and boom of c on clock,
// which panics once armed.
func panicTrio(t *testing.T) (c hotlimit.Config, a, b, boom *redislimit.Limiter, clock *limitertest.PanicClock) {
	t.Helper()
	client := newClient(t, redistest.Start(t))
	c = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour}
	a = newExact(t, client, c, frozenClock(), redislimit.WithPrefix("a:"))
	b = newExact(t, client, c, frozenClock(), redislimit.WithPrefix("b:"))
	clock = new(limitertest.PanicClock)
	clock.Now.Store(int64(time.Hour))
	boom = newExact(t, client, c, redislimit.WithPrefix("boom:"), hotlimit.WithClock(clock.Read))
	return c, a, b, boom, clock
}

// TestTakeAllPanicGivesBackWhatItOwes: a panic before the round trip (a
// later take's clock) leaves the GiveBack of a take not sent yet given
// back, and so does TakeBatch's panic in a take decided by its own
// limiter for the GiveBacks of the takes after it; and the panic goes on.
func TestTakeAllPanicGivesBackWhatItOwes(t *testing.T) {
	c, a, b, boom, clock := panicTrio(t)
	_, ra, err := a.TakeReceiptContext(context.Background(), "k", 3)
	require.NoError(t, err)
	_, rb, err := b.TakeReceiptContext(context.Background(), "k", 2)
	require.NoError(t, err)

	clock.Arm(true)
	takes := []redislimit.Take{{Limiter: a, Key: "k", N: 1, GiveBack: ra}, {Limiter: boom, Key: "k", N: 1}}
	require.PanicsWithValue(t, limitertest.PanicValue, func() { redislimit.TakeAll(context.Background(), takes) })
	assert.Equal(t, 5, take(t, a, "k", 0).Remaining, "a's GiveBack given back, nothing taken")

	batch := []hotlimit.BatchTake{
		{Limiter: a, Key: "k", N: 1},
		{Limiter: panickyTaker{b}, Key: "k", N: 1},
		{Limiter: oneByOne{ContextRefunder: b, config: c}, Key: "k", GiveBack: rb},
	}
	require.PanicsWithValue(t, "panicky: take", func() { a.TakeBatch(context.Background(), batch) })
	assert.Equal(t, 5, take(t, a, "k", 0).Remaining, "a's take given back")
	assert.Equal(t, 5, take(t, b, "k", 0).Remaining, "the GiveBack after the panic given back")
}

// TestTakeAllPanicOfAGiveBackLosesNoOther: when a take's clock panics
// before the round trip, and again when its own GiveBack is given back on
// the way out, the GiveBacks of the takes before it, in the pipeline not
// yet sent, are given back all the same, as RefundContext one by one in
// reverse order gives back the limits before one that panics; and the
// panic goes on.
func TestTakeAllPanicOfAGiveBackLosesNoOther(t *testing.T) {
	_, a, b, boom, clock := panicTrio(t)
	var receipts []hotlimit.Receipt
	for _, l := range []*redislimit.Limiter{a, b, boom} {
		_, r, err := l.TakeReceiptContext(context.Background(), "k", 3)
		require.NoError(t, err)
		receipts = append(receipts, r)
	}
	clock.Arm(true)
	takes := []redislimit.Take{
		{Limiter: a, Key: "k", GiveBack: receipts[0], Ahead: true},
		{Limiter: b, Key: "k", N: 1, GiveBack: receipts[1], Ahead: true},
		{Limiter: boom, Key: "k", GiveBack: receipts[2], Ahead: true},
	}
	require.PanicsWithValue(t, limitertest.PanicValue, func() { redislimit.TakeAll(context.Background(), takes) })
	clock.Arm(false)
	assert.Equal(t, 5, take(t, a, "k", 0).Remaining, "a's GiveBack given back")
	assert.Equal(t, 5, take(t, b, "k", 0).Remaining, "b's GiveBack given back, nothing taken")
	assert.Equal(t, 2, take(t, boom, "k", 0).Remaining, "boom's give-back panicked: nothing")
}

// panickyRefunder is a limiter whose give-backs panic.
type panickyRefunder struct{ hotlimit.ContextRefunder }

func (panickyRefunder) RefundContext(context.Context, string, hotlimit.Receipt) error {
	panic("panicky: refund")
}

// TestTakeBatchPanicOfAGiveBackLosesNoOther: when a take that TakeBatch
// leaves to its own limiter panics, and then the GiveBack of a take after
// it panics too as it is given back on the way out, every other receipt
// and GiveBack is given back all the same: Redis's takes', the decided
// takes' and the GiveBacks after; and a panic goes on.
func TestTakeBatchPanicOfAGiveBackLosesNoOther(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour}
	a := newExact(t, client, c, frozenClock(), redislimit.WithPrefix("a:"))
	b := newExact(t, client, c, frozenClock(), redislimit.WithPrefix("b:"))
	d := newExact(t, client, c, frozenClock(), redislimit.WithPrefix("d:"))
	_, rd, err := d.TakeReceiptContext(context.Background(), "k", 3)
	require.NoError(t, err)
	batch := []hotlimit.BatchTake{
		{Limiter: a, Key: "k", N: 1},
		{Limiter: oneByOne{ContextRefunder: b, config: c}, Key: "k", N: 2},
		{Limiter: panickyTaker{b}, Key: "k", N: 1},
		{Limiter: panickyRefunder{d}, Key: "k", GiveBack: hotlimit.Receipt{N: 1, At: rd.At}},
		{Limiter: oneByOne{ContextRefunder: d, config: c}, Key: "k", GiveBack: rd},
	}
	require.Panics(t, func() { a.TakeBatch(context.Background(), batch) })
	assert.Equal(t, 5, take(t, a, "k", 0).Remaining, "a's take given back")
	assert.Equal(t, 5, take(t, b, "k", 0).Remaining, "b's take, decided by itself, given back")
	assert.Equal(t, 5, take(t, d, "k", 0).Remaining, "the GiveBack after the one that panicked given back")
}
