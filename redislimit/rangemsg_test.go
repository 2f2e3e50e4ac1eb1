package redislimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestNewRangeErrorsNameTheLargest: a Config past the range where Redis's
// arithmetic is exact is refused with an error that names the largest value
// accepted in the caller's terms (a window as a duration, the burst or limit
// for the Config's window), not only a power of two in ticks the caller
// must convert: a year's window under hotlimit.WithClock (2^50 ns, about 13
// days) and a 100 years' one on Redis's clock (2^50 µs, about 35 years).
func TestNewRangeErrorsNameTheLargest(t *testing.T) {
	var now int64
	clocked := hotlimit.WithClock(func() int64 { return now })
	closed := redislimit.WithFailPolicy(redislimit.FailClosed) // Redis's range, not the in-memory one
	year := 365 * 24 * time.Hour
	for _, tc := range []struct {
		c    hotlimit.Config
		opts []hotlimit.Option
		says string
	}{
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: year}, []hotlimit.Option{clocked, closed},
			"at most 312h44m59.906842624s"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: 100 * year}, []hotlimit.Option{closed},
			"at most " + (time.Duration(1<<50) * time.Microsecond).String()},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 30, Window: time.Hour}, []hotlimit.Option{closed},
			"a burst of at most 1250999 at"},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Hour, Burst: 1 << 30}, []hotlimit.Option{clocked, closed},
			"a burst of at most 1250 at"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 1 << 30, Window: time.Hour}, []hotlimit.Option{closed},
			"a limit of at most 1250998 at"},
	} {
		_, err := redislimit.New(closedClient(t), tc.c, tc.opts...)
		require.Error(t, err, "%v", tc.c)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", tc.c)
		assert.Contains(t, err.Error(), tc.says, "%v", tc.c)
	}
	// the largest named is accepted
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Hour, Burst: 1250999},
		{Algorithm: hotlimit.SlidingCounter, Limit: 1250998, Window: time.Hour},
		{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Duration(1<<50) * time.Microsecond},
	} {
		_, err := redislimit.New(closedClient(t), c, closed)
		assert.NoError(t, err, "%v", c)
	}
}
