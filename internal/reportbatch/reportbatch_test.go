package reportbatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/reportbatch"
)

// undecided is a Batcher that leaves every take asked Ahead undecided, as
// redislimit's does while Redis fails.
type undecided struct{ *limitertest.Batching }

func (u undecided) TakeBatch(_ context.Context, takes []hotlimit.BatchTake) {
	for i := range takes {
		takes[i].Err = fmt.Errorf("down: %w", hotlimit.ErrNotDecided)
	}
}

// TestAskAsksTheBatchOnce: Ask asks the limits of the batch, and only
// them, in one TakeBatch, each for n after its give-back, in the limits'
// order; Of and Decided find each by its index.
func TestAskAsksTheBatchOnce(t *testing.T) {
	var log []string
	limiters := make([]*limitertest.Batching, 4)
	for i := range limiters {
		fw, err := fixedwindow.New(5, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
		require.NoError(t, err)
		limiters[i] = &limitertest.Batching{Refunder: fw, Log: &log}
	}
	_, r := limiters[3].TakeReceipt("k", 2)
	var s reportbatch.Set
	var asked []int
	s.Ask(context.Background(), limiters[0], 1<<1|1<<3, 0, func(i int) hotlimit.BatchTake {
		asked = append(asked, i)
		t := hotlimit.BatchTake{Limiter: limiters[i], Key: "k"}
		if i == 3 {
			t.GiveBack = r
		}
		return t
	})
	assert.Equal(t, []int{1, 3}, asked)
	assert.Equal(t, []string{"report 2, 1 given back"}, log)
	for _, i := range []int{0, 2} {
		assert.Nil(t, s.Of(i), "limit %d is not in the batch", i)
		assert.Nil(t, s.Decided(i), "limit %d is not in the batch", i)
	}
	for _, i := range []int{1, 3} {
		require.NotNil(t, s.Decided(i), "limit %d", i)
		assert.True(t, s.Of(i).Ahead, "limit %d", i)
		assert.Equal(t, 5, s.Decided(i).Decision.Remaining, "limit %d: the report after its give-back", i)
	}
}

// TestAskLeavesUndecidedToTheirTurn: a report the batcher could not decide
// is Of the set but not Decided: the caller asks it in its turn.
func TestAskLeavesUndecidedToTheirTurn(t *testing.T) {
	var s reportbatch.Set
	b := undecided{&limitertest.Batching{}}
	take := func(int) hotlimit.BatchTake { return hotlimit.BatchTake{Limiter: b, Key: "k"} }
	s.Ask(nil, b, 1<<0|1<<1, 0, take) //lint:ignore SA1012 a nil context is Background, as the service's Take passes it
	for i := range 2 {
		require.NotNil(t, s.Of(i))
		assert.ErrorIs(t, s.Of(i).Err, hotlimit.ErrNotDecided)
		assert.Nil(t, s.Decided(i))
	}
}

// TestAskNothingWhenEndedOrEmpty: an ended context or an empty batch asks
// nothing, and take is not called: every receipt stays the caller's.
func TestAskNothingWhenEndedOrEmpty(t *testing.T) {
	var log []string
	b := &limitertest.Batching{Log: &log}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for name, c := range map[string]struct {
		ctx   context.Context
		batch uint32
	}{"ended": {ended, 1}, "empty": {context.Background(), 0}} {
		var s reportbatch.Set
		s.Ask(c.ctx, b, c.batch, 0, func(int) hotlimit.BatchTake {
			t.Fatalf("%s: take called", name)
			return hotlimit.BatchTake{}
		})
		assert.Nil(t, s.Of(0), name)
	}
	assert.Empty(t, log)
	var none *reportbatch.Set
	assert.Nil(t, none.Of(0))
}
