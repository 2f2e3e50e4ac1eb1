package redislimit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestReportGivesZeroReceipt: a report (n = 0), which Redis always allows,
// takes nothing and gives the zero Receipt, as hotlimit.Receipt says, on a
// key Redis holds as on a fresh one, with and without a limiter's clock.
func TestReportGivesZeroReceipt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, a := range algorithms {
		for _, withClock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/clock=%v", a, withClock), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Hour}
				opts := []hotlimit.Option{redislimit.WithPrefix(fmt.Sprintf("reportrc%v%v:", a, withClock))}
				if withClock {
					opts = append(opts, hotlimit.WithClock(func() int64 { return int64(3 * time.Hour) }))
				}
				lim := newExact(t, newClient(t, srv), c, opts...)
				d, r, err := lim.TakeReceiptContext(ctx, "fresh", 0)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				assert.Equal(t, hotlimit.Receipt{}, r, "a report on a fresh key")

				d, r, err = lim.TakeReceiptContext(ctx, "held", 2)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				require.Equal(t, 2, r.N)
				d, r, err = lim.TakeReceiptContext(ctx, "held", 0)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				assert.Equal(t, 3, d.Remaining)
				assert.Equal(t, hotlimit.Receipt{}, r, "a report on a key Redis holds")
			})
		}
	}
}
