package redislimit_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// tally is a hotlimit.FallbackObserver that counts decisions by outcome and
// fallbacks by reason.
type tally struct {
	mu        sync.Mutex
	outcomes  map[hotlimit.Outcome]int
	fallbacks map[string]int
}

func (t *tally) Observe(e hotlimit.Event) {
	t.mu.Lock()
	t.outcomes[e.Outcome] += e.N
	t.mu.Unlock()
}

func (t *tally) ObserveFallback(f hotlimit.Fallback) {
	t.mu.Lock()
	t.fallbacks[f.Backend+" "+f.Reason]++
	t.mu.Unlock()
}

// TestServiceObserverCountsFallbacksConcurrently: a service whose rules
// keep their state in Redis reports to one observer; Redis is killed and
// many goroutines decide at once. Every decision is an Event, every one
// Redis could not make is a Fallback (one per limit of the rule), and the
// FailLocal limiter passes exactly what the limits allow, with the clock
// frozen.
func TestServiceObserverCountsFallbacksConcurrently(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	obs := &tally{outcomes: map[hotlimit.Outcome]int{}, fallbacks: map[string]int{}}
	svc, err := service.NewFromRules(service.Rules{
		Default: service.Limits{faultConfig},
		APIs: map[string]service.Limits{"two": {
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
			{Algorithm: hotlimit.TokenBucket, Limit: 7, Window: time.Hour, Scope: hotlimit.PerUser}}},
	}, frozenClock(), hotlimit.WithObserver(obs), hotlimit.WithFactory(redislimit.Factory(client,
		redislimit.WithPrefix(t.Name()+":"), redislimit.WithFailPolicy(redislimit.FailLocal), redislimit.WithBreaker(0, 0),
		// a round trip under -race on a loaded machine may take long
		redislimit.WithTimeout(10*time.Second))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	d, err := svc.TakeContext(context.Background(), "warm", "one", 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)

	srv.Kill()
	goroutines, each := 8, 20
	if testing.Short() {
		each = 5
	}
	var passed [2]atomic.Int64 // api "one" (the default), api "two"
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				api := (g + i) % 2
				d, err := svc.TakeContext(context.Background(), "u", "one two"[api*4:api*4+3], 1)
				assert.Error(t, err, "Redis is down")
				if d.Allowed {
					passed[api].Add(1)
				}
			}
		})
	}
	wg.Wait()

	total := goroutines * each
	assert.EqualValues(t, faultLimit, passed[0].Load(), "FailLocal passes the default's limit")
	assert.EqualValues(t, 3, passed[1].Load(), "FailLocal passes the tighter limit of two")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	decided := 0
	for _, n := range obs.outcomes {
		decided += n
	}
	assert.Equal(t, 1+total, decided, "one Event per decision")
	assert.Equal(t, total-faultLimit-3, obs.outcomes[hotlimit.OutcomeDenied])
	fallbacks := 0
	for reason, n := range obs.fallbacks {
		// a refused connection, or a dial that outlived the timeout
		assert.Contains(t, []string{"redis error", "redis timeout"}, reason)
		fallbacks += n
	}
	// A decision on "one" asks its one limiter. One on "two" asks both
	// limiters together, which Redis cannot decide, so each is asked in
	// turn, by its failure policy: the first, then the second for its
	// take when the first passes (3 times), for its report when it
	// denies (not for its wait: it has room).
	assert.Equal(t, total/2+2*(total/2), fallbacks, "every call Redis could not decide: "+strconv.Itoa(fallbacks))
}
