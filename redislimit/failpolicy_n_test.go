package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestFailOpenAndFailClosedByN: what FailOpen and FailClosed decide, while
// Redis cannot, for each n, as their docs say: FailOpen admits every
// request that could ever pass (0 ≤ n ≤ the burst), FailClosed denies every
// one but a report (n = 0), with RetryAfter the breaker's cooldown; a
// request above the burst, or of a negative n, never passes (Never); and
// neither knows anything of the key: Remaining and ResetAfter are 0.
func TestFailOpenAndFailClosedByN(t *testing.T) {
	const cooldown = 2 * time.Second
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute, Burst: 8}
	type want struct {
		allowed    bool
		retryAfter time.Duration
	}
	never := want{false, hotlimit.Never}
	for _, tc := range []struct {
		policy redislimit.FailPolicy
		byN    map[int]want
	}{
		{redislimit.FailOpen, map[int]want{-1: never, 0: {true, 0}, 1: {true, 0}, 8: {true, 0}, 9: never}},
		{redislimit.FailClosed, map[int]want{-1: never, 0: {true, 0}, 1: {false, cooldown}, 8: {false, cooldown}, 9: never}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			lim, err := redislimit.New(closedClient(t), c, redislimit.WithFailPolicy(tc.policy), redislimit.WithBreaker(3, cooldown))
			require.NoError(t, err)
			t.Cleanup(func() { _ = lim.Close() })
			for round := range 2 { // before the breaker opens, and after
				for _, n := range []int{-1, 0, 1, 8, 9} {
					d, err := lim.TakeContext(context.Background(), "k", n)
					require.Error(t, err, "n %d", n)
					w := tc.byN[n]
					assert.Equal(t, w.allowed, d.Allowed, "round %d, n %d", round, n)
					assert.Equal(t, w.retryAfter, d.RetryAfter, "round %d, n %d", round, n)
					assert.Equal(t, c.Limit, d.Limit, "round %d, n %d", round, n)
					assert.Zero(t, d.Remaining, "round %d, n %d", round, n)
					assert.Zero(t, d.ResetAfter, "round %d, n %d", round, n)
				}
			}
		})
	}
}
