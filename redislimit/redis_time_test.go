package redislimit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRedisClockReadToTheMicrosecond: without a limiter's clock, the scripts
// read Redis's TIME to the microsecond: a take's receipt names a time, in
// nanoseconds, between the TIMEs Redis answers before and after it. When
// both fall in one millisecond, past its first microsecond, a reading cut
// to the millisecond would fall before the first.
func TestRedisClockReadToTheMicrosecond(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 1000, Window: time.Hour})
			tight := false
			for try := 0; try < 500 && !tight; try++ {
				before, err := client.Time(ctx).Result()
				require.NoError(t, err)
				d, r, err := lim.TakeReceiptContext(ctx, fmt.Sprintf("k%d", try), 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				after, err := client.Time(ctx).Result()
				require.NoError(t, err)
				lo, hi := before.UnixMicro()*1000, after.UnixMicro()*1000
				require.GreaterOrEqual(t, r.At, lo, "the take's time is Redis's, after the TIME before it")
				require.LessOrEqual(t, r.At, hi, "the take's time is Redis's, before the TIME after it")
				tight = before.UnixMilli() == after.UnixMilli() && before.UnixMicro()%1000 != 0
			}
			require.True(t, tight, "no take ran within one millisecond")
		})
	}
}
