package redislimit

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestScriptsTTLRoundedUpPlusSecond checks the TTL each script gives the key
// a take writes, to the millisecond: the ticks until the key is full again
// (a token bucket's or GCRA's), its window ends (a fixed window's), two
// windows after the counted one (a sliding counter's) or the newest logged
// time leaves the window (a sliding log's), rounded up to the millisecond,
// plus a second. The ticks are microseconds, and each span is 1500 or
// 2999 of them, so that rounding down would give a millisecond less.
//
// Redis sets the expiry from its clock when the script runs, between the
// TIMEs read before and after it; when both fall in one millisecond, the
// expiry is exactly that millisecond plus the TTL. The four commands go in
// one pipeline, not a transaction: a Redis that freezes the clock its
// commands see for the length of a transaction would set the expiry from
// the transaction's start, which can fall a millisecond before the first
// TIME's.
func TestScriptsTTLRoundedUpPlusSecond(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	const perms = 1000 // ticks per millisecond
	cases := []struct {
		a        hotlimit.Algorithm
		now      int64
		ttlTicks int64 // until full, the window's end, or two windows on
	}{
		// limit 1 per 1500 ticks, burst 1: taking the one token leaves
		// 1500 ticks until it is back
		{hotlimit.TokenBucket, 0, 1500},
		{hotlimit.GCRA, 0, 1500},
		// the window [0, 1500) ends 1500 ticks after 0
		{hotlimit.FixedWindow, 0, 1500},
		// two windows after [0, 1500) is 3000, 2999 ticks after 1
		{hotlimit.SlidingCounter, 1, 2999},
		// the take logged at 0 leaves the window at 1500
		{hotlimit.SlidingLog, 0, 1500},
	}
	ms := func(v any) int64 { // TIME's reply, in whole milliseconds
		f := v.([]any)
		s, err := strconv.ParseInt(f[0].(string), 10, 64)
		require.NoError(t, err)
		us, err := strconv.ParseInt(f[1].(string), 10, 64)
		require.NoError(t, err)
		return s*1000 + us/1000
	}
	for _, c := range cases {
		require.NoError(t, scripts[c.a].Load(ctx, client).Err())
		want := (c.ttlTicks+perms-1)/perms + 1000
		exact := false
		for try := 0; try < 200 && !exact; try++ {
			key := fmt.Sprintf("ttl:%v:%d", c.a, try)
			p := client.Pipeline()
			before := p.Do(ctx, "TIME")
			run := scripts[c.a].Run(ctx, p, []string{key}, 1, strconv.FormatInt(c.now, 10), 1, 1500, 1, perms, 0, 0, "")
			expiry := p.Do(ctx, "PEXPIRETIME", key)
			after := p.Do(ctx, "TIME")
			_, err := p.Exec(ctx)
			require.NoError(t, err, "%v", c.a)
			rep, err := run.Int64Slice()
			require.NoError(t, err, "%v", c.a)
			require.Equal(t, int64(1), rep[0], "%v: the take passes", c.a)
			at, err := expiry.Int64()
			require.NoError(t, err, "%v", c.a)
			lo, hi := ms(before.Val()), ms(after.Val())
			require.GreaterOrEqual(t, at, lo+want, "%v: the key expires %d ms after the script", c.a, want)
			require.LessOrEqual(t, at, hi+want, "%v: the key expires %d ms after the script", c.a, want)
			exact = lo == hi
		}
		require.True(t, exact, "%v: no pipeline ran within one millisecond", c.a)
	}
}
