package redislimit_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestBadInputToNew: New and Factory refuse a missing client, an invalid
// Config and options out of range with an error wrapping
// ErrInvalidConfig, without Redis.
func TestBadInputToNew(t *testing.T) {
	cfg := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = down.Close() })
	cases := []struct {
		name   string
		client redis.UniversalClient
		c      hotlimit.Config
		opts   []hotlimit.Option
		// factory: Factory builds it all the same (it drops a lease
		// for the algorithms that cannot lease, as its doc says)
		factory bool
	}{
		{"nil client", nil, cfg, nil, false},
		{"typed nil client", (*redis.Client)(nil), cfg, nil, false},
		{"zero Config", down, hotlimit.Config{}, nil, false},
		{"Unlimited", down, hotlimit.Config{Algorithm: hotlimit.Unlimited}, nil, false},
		{"limit MinInt", down, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: math.MinInt, Window: time.Second}, nil, false},
		{"window MaxInt64", down, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: math.MaxInt64}, nil, false},
		{"burst MaxInt", down, cfg, []hotlimit.Option{hotlimit.WithBurst(math.MaxInt)}, false},
		{"fail policy out of range", down, cfg, []hotlimit.Option{redislimit.WithFailPolicy(200)}, false},
		{"batch MaxInt", down, cfg, []hotlimit.Option{redislimit.WithBatch(math.MaxInt, 1)}, false},
		{"flushers MaxInt", down, cfg, []hotlimit.Option{redislimit.WithBatch(1, math.MaxInt)}, false},
		{"lease of a sliding log", down, hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Second},
			[]hotlimit.Option{redislimit.WithLease(1, time.Second)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l *redislimit.Limiter
			var err error
			require.NotPanics(t, func() { l, err = redislimit.New(tc.client, tc.c, tc.opts...) })
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Nil(t, l)
			var fl hotlimit.Limiter
			require.NotPanics(t, func() { fl, err = redislimit.Factory(tc.client, tc.opts...)(tc.c) })
			if tc.factory {
				require.NoError(t, err)
				assert.NoError(t, fl.(*redislimit.Limiter).Close())
				return
			}
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Nil(t, fl)
		})
	}
	t.Run("nil options and options given twice", func(t *testing.T) {
		l, err := redislimit.New(down, cfg, nil, redislimit.WithBatch(8, 1), redislimit.WithBatch(0, 0), redislimit.WithHook(nil), redislimit.WithPrefix(""))
		require.NoError(t, err)
		assert.NoError(t, l.Close())
	})
	t.Run("helpers of nothing", func(t *testing.T) {
		assert.Equal(t, "error", redislimit.Reason(nil))
		assert.Equal(t, "FailPolicy(200)", redislimit.FailPolicy(200).String())
		assert.False(t, redislimit.CanLease(200))
		require.NotPanics(t, func() { redislimit.TakeAll(nil, nil) }) //lint:ignore SA1012 a nil context is what is tested
		takes := []redislimit.Take{{Key: "k", N: 1}}
		redislimit.TakeAll(context.Background(), takes)
		assert.ErrorIs(t, takes[0].Err, hotlimit.ErrInvalidConfig, "a Take without a Limiter")
		assert.False(t, takes[0].Decision.Allowed)
	})
	t.Run("a zero or nil Limiter panics, as its doc says", func(t *testing.T) {
		for _, l := range []*redislimit.Limiter{{}, nil} {
			assert.Panics(t, func() { l.Take("k", 1) })
			assert.Panics(t, func() { _ = l.Close() })
		}
	})
}

// TestBadInputToALimiter gives a Limiter on a running Redis counts,
// keys, receipts and clocks at the ends of their types, a nil context,
// and calls after Close, for every algorithm: nothing panics, counts out
// of range are denied with RetryAfter Never, a clock out of Redis's range
// is an error its failure policy answers, and Close twice returns nil.
func TestBadInputToALimiter(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, alg := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		c := hotlimit.Config{Algorithm: alg, Limit: 2, Window: time.Minute}
		t.Run(alg.String(), func(t *testing.T) {
			l := newLimiter(t, client, c, redislimit.WithPrefix(t.Name()+"\xff\x00{"))
			require.NotPanics(t, func() {
				for _, n := range []int{math.MinInt, -1, 3, math.MaxInt} {
					d, r, err := l.TakeReceiptContext(nil, "\xff", n) //lint:ignore SA1012 a nil context is what is tested
					require.NoError(t, err, "n=%d", n)
					assert.False(t, d.Allowed, "n=%d", n)
					assert.Equal(t, hotlimit.Never, d.RetryAfter, "n=%d", n)
					assert.Zero(t, r)
				}
				l.Refund("\xff", hotlimit.Receipt{N: math.MaxInt, At: math.MaxInt64})
				l.Refund("\xff", hotlimit.Receipt{N: math.MinInt, At: math.MinInt64})
				assert.NoError(t, l.RefundNowContext(ctx, "\xff", math.MinInt))
				assert.NoError(t, l.RefundNowContext(nil, "", 0)) //lint:ignore SA1012 a nil context is what is tested
				d, err := l.TakeContext(ctx, "\xff", 0)
				require.NoError(t, err)
				assert.Equal(t, 2, d.Remaining, "nothing was taken, and a made-up refund gives back no more than the quota")
				takes := []redislimit.Take{{Limiter: l, Key: "", N: math.MaxInt}, {Limiter: l, Key: "\x00", N: math.MinInt}, {Limiter: l, N: 1}}
				redislimit.TakeAll(ctx, takes)
				for i, tk := range takes[:2] {
					assert.NoError(t, tk.Err, "take %d", i)
					assert.Equal(t, hotlimit.Never, tk.Decision.RetryAfter, "take %d", i)
				}
				assert.True(t, takes[2].Decision.Allowed)
				require.NoError(t, l.Close())
				require.NoError(t, l.Close())
				assert.True(t, l.Allow("after close"), "a closed Limiter still decides")
			})
		})
		t.Run(alg.String()+"/clock out of range", func(t *testing.T) {
			for _, now := range []int64{math.MinInt64, math.MaxInt64} {
				l := newLimiter(t, client, c, hotlimit.WithClock(func() int64 { return now }), redislimit.WithPrefix(t.Name()))
				var err error
				require.NotPanics(t, func() { _, err = l.TakeContext(ctx, "k", 1) })
				assert.ErrorIs(t, err, redislimit.ErrClockRange)
			}
		})
	}
}

// TestInvalidOptionSaysWhatItWants: an option New refuses is named, with
// the value given and what it takes, as the constructors' errors are.
func TestInvalidOptionSaysWhatItWants(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = down.Close() })
	cfg := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	for _, tc := range []struct {
		opt  hotlimit.Option
		says []string
	}{
		{redislimit.WithFailPolicy(200), []string{"WithFailPolicy FailPolicy(200)", "want FailLocal, FailOpen or FailClosed"}},
		{redislimit.WithBreaker(3, 0), []string{"WithBreaker cooldown 0s", "want more than 0 with failures 3"}},
		{redislimit.WithBreaker(3, -time.Second), []string{"WithBreaker cooldown -1s", "want more than 0"}},
		{redislimit.WithLease(4, 0), []string{"WithLease ttl 0s", "want more than 0 with size 4"}},
		{redislimit.WithLease(4, -time.Millisecond), []string{"WithLease ttl -1ms", "want more than 0"}},
	} {
		_, err := redislimit.New(down, cfg, tc.opt)
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		for _, s := range tc.says {
			assert.ErrorContains(t, err, s)
		}
		assert.Regexp(t, `^redislimit: With`, err.Error(), "the package and the option, once")
	}
}

// TestConfigWithoutAlgorithmSaysItIsNotSet: a Config whose Algorithm was
// left out is told so, with the algorithms Redis runs, not shown the zero
// value's Go spelling.
func TestConfigWithoutAlgorithmSaysItIsNotSet(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = down.Close() })
	_, err := redislimit.New(down, hotlimit.Config{Limit: 10, Window: time.Second})
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "redislimit: Config.Algorithm not set, want one of TokenBucket, ")
	assert.NotContains(t, err.Error(), "Algorithm(0)")
}
