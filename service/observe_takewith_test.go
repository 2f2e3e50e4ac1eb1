package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestAnInvalidTakeWithIsNotObserved: TakeWith and TakeWithContext deny an
// invalid Config with an error and decide nothing, so the observer hears of
// nothing (no override decision counts in the metrics).
func TestAnInvalidTakeWithIsNotObserved(t *testing.T) {
	heard := 0
	obs := hotlimit.ObserverFunc(func(hotlimit.Event) { heard++ })
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.GCRA, Limit: 0, Window: time.Second},
		{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Second, Scope: 9},
	} {
		d, err := s.TakeWith("u", "a", c, 1)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", c)
		assert.False(t, d.Allowed)
		d, err = s.TakeWithContext(context.Background(), "u", "a", c, 1)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", c)
		assert.False(t, d.Allowed)
	}
	assert.Zero(t, heard)
	_, err = s.TakeWith("u", "a", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Second}, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, heard, "a valid one is heard of")
}
