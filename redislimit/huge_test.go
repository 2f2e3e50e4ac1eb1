package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// huge returns counts above a burst up to math.MaxInt, those about 2^53
// among them, where a Lua number (a double) stops holding every integer.
func huge(burst int) []int {
	ns := []int{burst + 1}
	if strconv.IntSize == 64 { // on 32 bits, math.MaxInt is below 2^53
		for _, n := range []int64{1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<62 + 1} {
			ns = append(ns, int(n))
		}
	}
	return append(ns, math.MaxInt-1, math.MaxInt)
}

// TestRefundNowOfHugeCountsGivesBackABurst: RefundNowContext of far more
// requests than a key's burst (up to math.MaxInt, about 2^53 included), on a key that spent its
// burst, is no error and gives back the burst and no more, for every
// algorithm, by Redis's TIME and by an injected clock: the key then admits
// its burst, then nothing.
func TestRefundNowOfHugeCountsGivesBackABurst(t *testing.T) {
	eachAlgorithmAndClock(t, func(t *testing.T, lim *redislimit.Limiter) {
		burst := lim.Burst()
		for i, n := range huge(burst) {
			key := fmt.Sprintf("k%d", i)
			require.True(t, take(t, lim, key, burst).Allowed, "%d: the burst", n)
			require.NoError(t, lim.RefundNowContext(context.Background(), key, n), "%d", n)
			assert.Equal(t, burst, passes(t, lim, key, burst+2), "%d given back: the burst, no more", n)
		}
	})
}

// TestTakeOfHugeCountsIsDeniedAndTakesNothing: a take of more requests
// than a key's burst (up to math.MaxInt, about 2^53 included, where the
// script's doubles round n) is denied, for good (RetryAfter Never), for
// every algorithm, by Redis's TIME and by an injected clock, and takes
// nothing: the key then admits its burst, then nothing.
func TestTakeOfHugeCountsIsDeniedAndTakesNothing(t *testing.T) {
	eachAlgorithmAndClock(t, func(t *testing.T, lim *redislimit.Limiter) {
		burst := lim.Burst()
		for i, n := range huge(burst) {
			key := fmt.Sprintf("k%d", i)
			d := take(t, lim, key, n)
			assert.False(t, d.Allowed, "%d", n)
			assert.Equal(t, hotlimit.Never, d.RetryAfter, "%d: never", n)
			assert.Equal(t, burst, passes(t, lim, key, burst+2), "after a take of %d: the burst, no more", n)
		}
	})
}

// passes returns how many of tries takes of one request on key lim admits.
func passes(t *testing.T, lim *redislimit.Limiter, key string, tries int) int {
	t.Helper()
	passed := 0
	for range tries {
		if take(t, lim, key, 1).Allowed {
			passed++
		}
	}
	return passed
}
