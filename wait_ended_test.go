package hotlimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// serviceLimiter is how a caller waits on a service: one API's rule as a
// hotlimit.ContextTaker keyed by user.
type serviceLimiter struct {
	s   *service.Service
	api string
}

func (l serviceLimiter) Allow(user string) bool { return l.s.Allow(user, l.api) }
func (l serviceLimiter) Take(user string, n int) hotlimit.Decision {
	return l.s.Take(user, l.api, n)
}
func (l serviceLimiter) TakeContext(ctx context.Context, user string, n int) (hotlimit.Decision, error) {
	return l.s.TakeContext(ctx, user, l.api, n)
}

// TestWaitEndedDecisionIsNoPass: a decision that passes only because the
// limiter could not decide while the caller's context ended (a failure
// policy that fails open, counting nothing; a service rule of several
// limits that gave back what the others took) is no pass: WaitN returns the
// context's error, so that its caller does not serve a request counted
// nowhere, and takes nothing.
func TestWaitEndedDecisionIsNoPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	alone := &limitertest.CancelingLimiter{Cancel: cancel}
	err := hotlimit.Wait(ctx, alone, "k")
	assert.ErrorIs(t, err, context.Canceled, "a failure policy's pass of an ended request")

	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	onBackend := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser}
	remote := &limitertest.CancelingRefunder{}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, onBackend}},
		limitertest.OnBackend(onBackend, remote, service.NewLimiter))
	require.NoError(t, err)
	l := serviceLimiter{s: s, api: "GET /"}

	ctx, cancel = context.WithCancel(context.Background())
	remote.Cancel = cancel
	err = hotlimit.WaitN(ctx, l, "u", 2)
	assert.ErrorIs(t, err, context.Canceled, "the service gave the request back")
	remote.Cancel = nil
	_, each, err := s.TakeEach(context.Background(), "u", "GET /", 0, nil)
	require.NoError(t, err)
	require.Len(t, each, 2)
	for _, ld := range each {
		if ld.Config == memory {
			assert.Equal(t, 3, ld.Decision.Remaining, "the memory limit counts nothing")
		}
	}

	// A live request is a pass as before, and counts.
	require.NoError(t, hotlimit.WaitN(context.Background(), l, "u", 2))
	_, each, err = s.TakeEach(context.Background(), "u", "GET /", 0, nil)
	require.NoError(t, err)
	for _, ld := range each {
		if ld.Config == memory {
			assert.Equal(t, 1, ld.Decision.Remaining, "the live request counts")
		}
	}
}

// leavingDenier denies, with RetryAfter Never, while it cancels the caller's
// context: the caller left during a decision that denied.
type leavingDenier struct{ cancel context.CancelFunc }

func (l *leavingDenier) Allow(string) bool { return false }
func (l *leavingDenier) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never}
}
func (l *leavingDenier) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	l.cancel()
	return l.Take(key, n), nil
}

// TestWaitEndedDuringADenialReturnsTheContextsError: when ctx ends during a
// decision that denied the request, WaitN returns ctx.Err(), as documented,
// before reading the denial's RetryAfter: not ErrNeverPasses.
func TestWaitEndedDuringADenialReturnsTheContextsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := hotlimit.Wait(ctx, &leavingDenier{cancel: cancel}, "k")
	assert.Equal(t, context.Canceled, err)
	assert.NotErrorIs(t, err, hotlimit.ErrNeverPasses)
}
