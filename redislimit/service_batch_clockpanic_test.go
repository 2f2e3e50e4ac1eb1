package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// armingDenier is a limit that denies every request, and sets armed as it
// does: what happens next happens after a denial.
type armingDenier struct {
	hotlimit.Refunder
	armed *atomic.Bool
}

func (a armingDenier) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d := a.Refunder.Take(key, 0)
	if n > 0 {
		a.armed.Store(true)
		d.Allowed, d.RetryAfter = false, time.Second
	}
	return d, hotlimit.Receipt{}
}

func (a armingDenier) Take(key string, n int) hotlimit.Decision {
	d, _ := a.TakeReceipt(key, n)
	return d
}

// TestServiceDenialClockPanicGivesBackTheOthers: when a limit denies a
// request that two limits on Redis took together, and the clock of the
// second panics as their give-backs are made (before the round trip, and
// again as its own give-back is made on the way out), the first still gets
// its request back, as when the limits give back one by one in reverse
// order, the limits before one that panics given back all the same; and
// the panic goes on.
func TestServiceDenialClockPanicGivesBackTheOthers(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var armed atomic.Bool
	panicky := hotlimit.WithClock(func() int64 {
		if armed.Load() {
			panic("clock")
		}
		return int64(time.Hour)
	})
	factory := func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
		switch c.Algorithm {
		case hotlimit.TokenBucket:
			return redislimit.New(client, c, frozenClock(), redislimit.WithTimeout(exactTimeout))
		case hotlimit.FixedWindow:
			return redislimit.New(client, c, panicky, redislimit.WithTimeout(exactTimeout))
		}
		l, err := service.NewLimiter(c)
		if err != nil {
			return nil, err
		}
		return armingDenier{l.(hotlimit.Refunder), &armed}, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Hour},
		{Algorithm: hotlimit.SlidingCounter, Limit: 9, Window: time.Hour},
	}}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	require.PanicsWithValue(t, "clock", func() { _, _ = svc.TakeContext(ctx, "zed", "GET /a", 2) })
	armed.Store(false)
	_, each, err := svc.TakeEach(ctx, "zed", "GET /a", 0, nil)
	require.NoError(t, err)
	require.Len(t, each, 3)
	assert.Equal(t, 4, each[0].Decision.Remaining, "the token bucket got its 2 back")
	assert.Equal(t, 4, each[1].Decision.Remaining, "the fixed window's give-back panicked: it keeps 2")
}
