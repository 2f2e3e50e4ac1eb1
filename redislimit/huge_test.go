package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// huge returns counts above a burst up to math.MaxInt, those about 2^53
// among them, where a Lua number (a double) stops holding every integer.
func huge(burst int) []int {
	return []int{burst + 1, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<62 + 1, math.MaxInt - 1, math.MaxInt}
}

// TestRefundNowOfHugeCountsGivesBackABurst: RefundNowContext of far more
// requests than a key's burst (up to math.MaxInt, about 2^53 included), on a key that spent its
// burst, is no error and gives back the burst and no more, for every
// algorithm, by Redis's TIME and by an injected clock: the key then admits
// its burst, then nothing.
func TestRefundNowOfHugeCountsGivesBackABurst(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	for _, a := range algorithms {
		for _, withClock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/clock=%t", a, withClock), func(t *testing.T) {
				var opts []hotlimit.Option
				if withClock {
					opts = append(opts, hotlimit.WithClock(clock.Load))
				}
				// a day's window: Redis's TIME refills nothing during the test
				lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 4, Window: 24 * time.Hour}, opts...)
				burst := lim.Burst()
				for i, n := range huge(burst) {
					key := fmt.Sprintf("k%d", i)
					require.True(t, take(t, lim, key, burst).Allowed, "%d: the burst", n)
					require.NoError(t, lim.RefundNowContext(context.Background(), key, n), "%d", n)
					passed := 0
					for range burst + 2 {
						if take(t, lim, key, 1).Allowed {
							passed++
						}
					}
					assert.Equal(t, burst, passed, "%d given back: the burst, no more", n)
				}
			})
		}
	}
}

// TestTakeOfHugeCountsIsDeniedAndTakesNothing: a take of more requests
// than a key's burst (up to math.MaxInt, about 2^53 included, where the
// script's doubles round n) is denied, for good (RetryAfter Never), for
// every algorithm, by Redis's TIME and by an injected clock, and takes
// nothing: the key then admits its burst, then nothing.
func TestTakeOfHugeCountsIsDeniedAndTakesNothing(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	for _, a := range algorithms {
		for _, withClock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/clock=%t", a, withClock), func(t *testing.T) {
				var opts []hotlimit.Option
				if withClock {
					opts = append(opts, hotlimit.WithClock(clock.Load))
				}
				lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 4, Window: 24 * time.Hour}, opts...)
				burst := lim.Burst()
				for i, n := range huge(burst) {
					key := fmt.Sprintf("k%d", i)
					d := take(t, lim, key, n)
					assert.False(t, d.Allowed, "%d", n)
					assert.Equal(t, hotlimit.Never, d.RetryAfter, "%d: never", n)
					passed := 0
					for range burst + 2 {
						if take(t, lim, key, 1).Allowed {
							passed++
						}
					}
					assert.Equal(t, burst, passed, "after a take of %d: the burst, no more", n)
				}
			})
		}
	}
}
