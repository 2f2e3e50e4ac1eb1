package givenclock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/givenclock"
)

func TestOf(t *testing.T) {
	one := func() int64 { return 1 }
	two := func() int64 { return 2 }
	assert.Nil(t, givenclock.Of(nil))
	assert.Nil(t, givenclock.Of([]hotlimit.Option{nil, hotlimit.WithBurst(3), hotlimit.WithClock(nil)}), "no clock, a nil one")
	assert.Equal(t, int64(1), givenclock.Of([]hotlimit.Option{hotlimit.WithClock(one)})())
	assert.Equal(t, int64(2), givenclock.Of([]hotlimit.Option{hotlimit.WithClock(one), hotlimit.WithClock(two)})(), "the last wins")
	assert.Equal(t, int64(1), givenclock.Of([]hotlimit.Option{hotlimit.WithClock(one), hotlimit.WithClock(nil)})(), "a nil clock keeps the one before")
}
