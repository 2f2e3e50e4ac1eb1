package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// downLimiter is a factory's limiter on a backend that is down: its
// failure policy admits every request, with the error, and a receipt as a
// limiter that counted after all might give. It records every call.
type downLimiter struct {
	mu    sync.Mutex
	calls []string
}

var _ hotlimit.ContextRefunder = (*downLimiter)(nil)

var errBackendDown = errors.New("backend down")

func (l *downLimiter) record(op, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, op+" "+key)
}

func (l *downLimiter) Allow(key string) bool { return l.Take(key, 1).Allowed }

func (l *downLimiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.TakeReceipt(key, n)
	return d
}

func (l *downLimiter) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := l.TakeReceiptContext(ctx, key, n)
	return d, err
}

func (l *downLimiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, r, _ := l.TakeReceiptContext(context.Background(), key, n)
	return d, r
}

func (l *downLimiter) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	l.record("take", key)
	return hotlimit.Decision{Allowed: true, Limit: 7}, hotlimit.Receipt{N: n, At: 1}, errBackendDown
}

func (l *downLimiter) Refund(key string, _ hotlimit.Receipt) { l.record("refund", key) }

func (l *downLimiter) RefundContext(_ context.Context, key string, _ hotlimit.Receipt) error {
	l.record("refund", key)
	return nil
}

// TestRefundSkipsALimitThatCouldNotDecide: a limit whose failure policy
// passed the request, undecided, took nothing from its quota, and a refund
// never asks it to give anything back, with or without a context; the
// other limit of the rule gets its request back.
func TestRefundSkipsALimitThatCouldNotDecide(t *testing.T) {
	down := &downLimiter{}
	remote := &remoteFactory{}
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == 7 {
			return down, nil
		}
		return remote.build(c, opts...)
	}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{cfg(hotlimit.FixedWindow, 3), scoped(cfg(hotlimit.FixedWindow, 7), hotlimit.PerUser)},
		APIs:    map[string]service.Limits{"GET /down": {cfg(hotlimit.FixedWindow, 7)}},
	}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	ctx := context.Background()

	for _, refund := range []string{"Refund", "RefundContext"} {
		down.calls = nil
		d, r, err := s.TakeReceiptContext(ctx, "zed", "GET /pay", 1)
		require.ErrorIs(t, err, errBackendDown)
		require.True(t, d.Allowed)
		require.Equal(t, 1, remote.built[3].seen["3:zed|GET /pay"])
		if refund == "Refund" {
			s.Refund(r)
		} else {
			require.NoError(t, s.RefundContext(ctx, r))
		}
		assert.Equal(t, 0, remote.built[3].seen["3:zed|GET /pay"], "%s: the limit that decided gets it back", refund)
		assert.Equal(t, []string{"take user|zed"}, down.calls, "%s: the undecided limit is not asked", refund)
	}

	down.calls = nil
	d, r, err := s.TakeReceiptContext(ctx, "zed", "GET /down", 1)
	require.ErrorIs(t, err, errBackendDown)
	require.True(t, d.Allowed)
	assert.Equal(t, service.Receipt{}, r, "a rule of one undecided limit took nothing")
	require.NoError(t, s.RefundContext(ctx, r))
	s.Refund(r)
	assert.Equal(t, []string{"take 3:zed|GET /down"}, down.calls)
}

// TestRefundContextReachesTheLimiters: TakeReceiptContext asks each limit
// under ctx, and RefundContext gives each back under its own ctx, under
// its scope's key, in reverse order; Refund gives back without one. A
// limiter's error comes back from RefundContext.
func TestRefundContextReachesTheLimiters(t *testing.T) {
	f := &remoteFactory{}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{cfg(hotlimit.FixedWindow, 2), scoped(cfg(hotlimit.TokenBucket, 5), hotlimit.PerUser)},
		APIs:    map[string]service.Limits{"GET /one": {cfg(hotlimit.GCRA, 4)}},
	}, hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	taking := context.WithValue(context.Background(), ctxKey{}, "req-1")
	giving := context.WithValue(context.Background(), ctxKey{}, "back-1")

	d, r, err := s.TakeReceiptContext(taking, "zed", "GET /pay", 2)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.NoError(t, s.RefundContext(giving, r))
	assert.Equal(t, []string{"take 3:zed|GET /pay req-1", "refund 3:zed|GET /pay back-1"}, f.built[2].calls)
	assert.Equal(t, []string{"take user|zed req-1", "refund user|zed back-1"}, f.built[5].calls)
	assert.Equal(t, 0, f.built[2].seen["3:zed|GET /pay"])
	assert.Equal(t, 0, f.built[5].seen["user|zed"])

	d, r, err = s.TakeReceiptContext(taking, "zed", "GET /one", 3)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	cancelled, cancel := context.WithCancel(giving)
	cancel()
	assert.ErrorIs(t, s.RefundContext(cancelled, r), context.Canceled, "the limiter's error")
	assert.Equal(t, []string{"take 3:zed|GET /one req-1", "refund 3:zed|GET /one back-1"}, f.built[4].calls)
	assert.Equal(t, 0, f.built[4].seen["3:zed|GET /one"])

	_, r, err = s.TakeReceiptContext(taking, "zed", "GET /one", 1)
	require.NoError(t, err)
	s.Refund(r)
	assert.Len(t, f.built[4].calls, 3, "Refund asks without a context")
	assert.Equal(t, 0, f.built[4].seen["3:zed|GET /one"])
}

// TestTakeReceiptContextOfAnEndedRequestTakesNothing: a rule of several
// limits, one of which could not decide while the request's context
// ended, gives back what the others took (see TakeContext), and the
// receipt is the zero one.
func TestTakeReceiptContextOfAnEndedRequestTakesNothing(t *testing.T) {
	down := &downLimiter{}
	f := &recordingFactory{}
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == 7 {
			return down, nil
		}
		return f.build(c, opts...)
	}
	decides := cfg(hotlimit.FixedWindow, 2)
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{
		decides, scoped(cfg(hotlimit.FixedWindow, 7), hotlimit.PerUser),
	}}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	d, r, err := s.TakeReceiptContext(cancelled, "zed", "GET /pay", 1)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errBackendDown)
	require.True(t, d.Allowed)
	assert.Equal(t, service.Receipt{}, r)
	assert.Equal(t, 2, f.of(t, decides).Take("3:zed|GET /pay", 0).Remaining, "the limit that decided gave it back")

	d, r, err = s.TakeReceiptContext(context.Background(), "zed", "GET /pay", 1)
	require.ErrorIs(t, err, errBackendDown)
	require.True(t, d.Allowed)
	assert.NotEqual(t, service.Receipt{}, r, "a request that goes on keeps what the limit that decided took")
}
