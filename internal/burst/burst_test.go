package burst_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/burst"
)

func TestUnspelled(t *testing.T) {
	c := func(a hotlimit.Algorithm, b int) hotlimit.Config {
		return hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Second, Burst: b}
	}
	for i, tc := range []struct {
		c        hotlimit.Config
		defBurst int
		want     int
	}{
		{c(hotlimit.TokenBucket, 0), 0, 0},
		{c(hotlimit.TokenBucket, 3), 0, 0}, // the limit, with no default burst
		{c(hotlimit.GCRA, 3), 0, 0},
		{c(hotlimit.TokenBucket, 4), 0, 4},
		{c(hotlimit.TokenBucket, 5), 5, 0}, // the default burst
		{c(hotlimit.GCRA, 5), 5, 0},
		{c(hotlimit.TokenBucket, 3), 5, 3}, // the limit is not the default burst then
		{c(hotlimit.TokenBucket, 0), 5, 0},
		{c(hotlimit.FixedWindow, 3), 0, 3}, // no burst to leave out: Validate rejects it
	} {
		got := burst.Unspelled(tc.c, tc.defBurst)
		assert.Equal(t, tc.want, got.Burst, "case %d", i)
		got.Burst = tc.c.Burst
		assert.Equal(t, tc.c, got, "case %d: nothing else changes", i)
	}
}
