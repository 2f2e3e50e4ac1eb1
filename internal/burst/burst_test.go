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

func TestSpelled(t *testing.T) {
	c := func(a hotlimit.Algorithm, b int) hotlimit.Config {
		return hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Second, Burst: b}
	}
	for i, tc := range []struct {
		c        hotlimit.Config
		defBurst int
		want     int
	}{
		{c(hotlimit.TokenBucket, 0), 0, 0}, // no default: the limit, as 0 says
		{c(hotlimit.TokenBucket, 0), 5, 5}, // the default written out
		{c(hotlimit.GCRA, 0), 5, 5},
		{c(hotlimit.TokenBucket, 4), 5, 4}, // its own burst wins
		{c(hotlimit.FixedWindow, 0), 5, 0}, // no burst to take
		{c(hotlimit.SlidingLog, 0), 5, 0},
	} {
		got := burst.Spelled(tc.c, tc.defBurst)
		assert.Equal(t, tc.want, got.Burst, "case %d", i)
		assert.Equal(t, burst.Unspelled(tc.c, tc.defBurst), burst.Unspelled(got, tc.defBurst), "case %d: the same limiter", i)
		got.Burst = tc.c.Burst
		assert.Equal(t, tc.c, got, "case %d: nothing else changes", i)
	}
}

func TestOptions(t *testing.T) {
	c := func(a hotlimit.Algorithm) hotlimit.Config {
		return hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Second}
	}
	def := []hotlimit.Option{hotlimit.WithMaxKeys(9), hotlimit.WithBurst(5)}
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		assert.Equal(t, 5, hotlimit.NewOptions(burst.Options(c(a), def)...).Burst, "%v takes the default", a)
	}
	for _, a := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog, hotlimit.Unlimited} {
		o := hotlimit.NewOptions(burst.Options(c(a), def)...)
		assert.Equal(t, 0, o.Burst, "%v has no burst", a)
		assert.Equal(t, 9, o.MaxKeys, "%v: the other options stay", a)
	}
	assert.Equal(t, 5, hotlimit.NewOptions(def...).Burst, "opts itself is not changed")
	assert.Len(t, burst.Options(c(hotlimit.FixedWindow), def[:1]), 1, "no default, nothing to take off")

	// opts with room to spare: the result is no view of opts that a later
	// append to opts writes into.
	spare := append(make([]hotlimit.Option, 0, 4), def...)
	o := burst.Options(c(hotlimit.FixedWindow), spare)
	_ = append(spare, hotlimit.WithBurst(7))
	assert.Equal(t, 0, hotlimit.NewOptions(o...).Burst, "the result keeps its burst taken off")
}
