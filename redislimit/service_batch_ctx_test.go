package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// ctxRules has a rule of two limits on Redis, asked together, and one
// with a sliding log after them, asked on its own.
var ctxRules = service.Rules{
	Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerUser},
	},
	APIs: map[string]service.Limits{"POST /log": {
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Minute},
		{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Minute, Scope: hotlimit.PerAPI},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerUser},
	}},
}

// remaining is what each limit of the rule of user and api has left, read
// with a report.
func remaining(t *testing.T, svc *service.Service, user, api string) []int {
	t.Helper()
	_, each, err := svc.TakeEach(context.Background(), user, api, 0, nil)
	require.NoError(t, err)
	left := make([]int, len(each))
	for i, e := range each {
		left[i] = e.Decision.Remaining
	}
	return left
}

// heldService returns a service of ctxRules on a client of its own for
// srv (FailOpen), whose pipelines hold can hold.
func heldService(t *testing.T, srv *redistest.Server) (*service.Service, *pipeHold) {
	t.Helper()
	client := newClient(t, srv)
	hold := newPipeHold()
	client.AddHook(hold)
	svc, err := service.NewFromRules(ctxRules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client,
		redislimit.WithTimeout(exactTimeout), redislimit.WithFailPolicy(redislimit.FailOpen), redislimit.WithPrefix(t.Name()))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	return svc, hold
}

// TestServiceBatchCanceledBeforeSent: a request whose context is canceled
// as its limits' pipeline is about to go gets each limit's failure policy
// (FailOpen here), an error of each limit and one saying the request ended
// and was given back, and Redis keeps nothing of it, as when its limits
// are asked in turn.
func TestServiceBatchCanceledBeforeSent(t *testing.T) {
	srv := redistest.Start(t)
	for _, api := range []string{"GET /a", "POST /log"} {
		t.Run(api, func(t *testing.T) {
			svc, hold := heldService(t, srv)
			before := remaining(t, svc, "zed", api)
			ctx, cancel := context.WithCancel(context.Background())
			hold.before = cancel
			close(hold.release)
			hold.armed.Store(true)
			d, each, err := svc.TakeEach(ctx, "zed", api, 1, nil)
			<-hold.ran
			assert.True(t, d.Allowed, "FailOpen")
			require.ErrorIs(t, err, context.Canceled)
			assert.Contains(t, err.Error(), "given back")
			for i, e := range each {
				assert.ErrorIs(t, e.Err, context.Canceled, "limit %d", i)
			}
			assert.Equal(t, before, remaining(t, svc, "zed", api), "Redis keeps nothing")
		})
	}
}

// TestServiceBatchCanceledOnTheWayBack: a request whose context is
// canceled once Redis ran its limits' pipeline, before the answers are
// back, is decided by Redis, as when the last limit asked in turn answered
// before the cancellation: counted, with no error, when no limit is left
// to ask; when a sliding log is (asked after the others, it fails at once)
// every limit gives it back, and Redis keeps nothing.
func TestServiceBatchCanceledOnTheWayBack(t *testing.T) {
	srv := redistest.Start(t)
	for _, api := range []string{"GET /a", "POST /log"} {
		t.Run(api, func(t *testing.T) {
			svc, hold := heldService(t, srv)
			before := remaining(t, svc, "zed", api)
			ctx, cancel := context.WithCancel(context.Background())
			hold.armed.Store(true)
			type outcome struct {
				d    hotlimit.Decision
				each []service.LimitDecision
				err  error
			}
			done := make(chan outcome, 1)
			go func() {
				d, each, err := svc.TakeEach(ctx, "zed", api, 1, nil)
				done <- outcome{d, each, err}
			}()
			<-hold.ran
			cancel()
			close(hold.release)
			o := <-done
			assert.True(t, o.d.Allowed)
			after := remaining(t, svc, "zed", api)
			if api == "GET /a" {
				require.NoError(t, o.err)
				assert.Equal(t, []int{before[0] - 1, before[1] - 1}, after, "counted")
				return
			}
			require.ErrorIs(t, o.err, context.Canceled)
			assert.Contains(t, o.err.Error(), "given back")
			require.Len(t, o.each, 3)
			for _, e := range o.each {
				if e.Config.Algorithm == hotlimit.SlidingLog {
					assert.ErrorIs(t, e.Err, context.Canceled, "the sliding log, asked after the others, could not decide")
				} else {
					assert.NoError(t, e.Err, "%v: Redis decided", e.Config)
				}
			}
			assert.Equal(t, before, after, "Redis keeps nothing")
		})
	}
}
