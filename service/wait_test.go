package service_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// fakeSleep returns a WithSleep option that advances now by each sleep and
// records it, so that a wait takes no real time.
func fakeSleep(now *atomic.Int64, slept *[]time.Duration) hotlimit.WaitOption {
	return hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		*slept = append(*slept, d)
		now.Add(int64(d))
		return nil
	})
}

// TestWaitPacesThePair: a pair whose quota is spent waits for the rule's
// RetryAfter and then counts its request; the other pairs are not held up.
// A rule of several limits waits once, until every limit admits the
// request, not for the first limit's wait and then the other's.
func TestWaitPacesThePair(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	perSecond := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second}
	per10s := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: 10 * time.Second}
	svc, err := service.NewFromRules(service.Rules{
		Default: service.Limits{perSecond},
		APIs:    map[string]service.Limits{"bank": {perSecond, per10s}},
	}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	var slept []time.Duration
	sleep := fakeSleep(&now, &slept)

	for range 2 {
		require.NoError(t, svc.Wait(context.Background(), "m1", "card", sleep))
	}
	assert.Empty(t, slept, "within the quota: no wait")
	require.NoError(t, svc.Wait(context.Background(), "m1", "card", sleep))
	assert.Equal(t, []time.Duration{time.Second}, slept, "the window's end")
	assert.Equal(t, 1, svc.Take("m1", "card", 0).Remaining, "the third request counted in the next window")
	require.NoError(t, svc.Wait(context.Background(), "m2", "card", sleep))
	assert.Len(t, slept, 1, "another pair's quota is its own")

	slept = nil
	now.Store(int64(time.Hour + 10*time.Second)) // both windows start
	for range 2 {
		require.NoError(t, svc.Wait(context.Background(), "m1", "bank", sleep))
	}
	require.NoError(t, svc.WaitN(context.Background(), "m1", "bank", 1, sleep))
	assert.Equal(t, []time.Duration{10 * time.Second}, slept,
		"one wait until both admit it: the second's limit denies it for 1 s, the ten seconds' for 10")
	assert.Equal(t, 1, svc.Take("m1", "bank", 0).Remaining, "counted once the ten seconds were over")
}

// TestWaitErrors: what waiting cannot help returns at once, taking
// nothing: more than the rule passes at once, a deadline before the wait
// ends, an ended context, a Service New did not make; a limit in shadow
// mode never makes a caller wait.
func TestWaitErrors(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	shadow := c
	shadow.Shadow = true
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{c}, APIs: map[string]service.Limits{"new": {shadow}}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	var slept []time.Duration
	sleep := fakeSleep(&now, &slept)

	err = svc.WaitN(context.Background(), "u", "a", 3, sleep)
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses, "3 at once under a burst of 2")
	assert.ErrorIs(t, svc.WaitN(context.Background(), "u", "a", -1, sleep), hotlimit.ErrNeverPasses)

	require.NoError(t, svc.WaitN(context.Background(), "u", "a", 2, sleep))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	now.Add(int64(time.Second)) // a tenth of a token: 29 s to wait
	err = svc.Wait(ctx, "u", "a", sleep)
	assert.NoError(t, err, "an hour's deadline outlasts the wait")
	assert.Equal(t, []time.Duration{29 * time.Second}, slept)

	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	slept = nil
	err = svc.Wait(short, "u", "a", sleep)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "30 s to wait, a second left")
	assert.Empty(t, slept, "at once, without sleeping")

	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	assert.ErrorIs(t, svc.Wait(done, "v", "a", sleep), context.Canceled)
	assert.Equal(t, 2, svc.Take("v", "a", 0).Remaining, "an ended wait took nothing")

	for range 5 {
		require.NoError(t, svc.Wait(context.Background(), "u", "new", sleep), "shadow mode never denies")
	}
	assert.Empty(t, slept)

	//lint:ignore SA1012 a nil ctx is context.Background(), as for the other methods
	assert.NoError(t, svc.Wait(nil, "w", "a", sleep))

	var zero service.Service
	err = zero.Wait(context.Background(), "u", "a")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "service.New")
	var nilSvc *service.Service
	assert.Error(t, nilSvc.Wait(context.Background(), "u", "a"))
	assert.False(t, errors.Is(err, hotlimit.ErrNeverPasses))
}
