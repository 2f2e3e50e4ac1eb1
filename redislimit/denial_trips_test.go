package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// denierAt has three limits on one Redis client, the one of 1 request at
// the given place, the others roomy.
func denierAt(at int) []hotlimit.Config {
	limits := []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Hour, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Hour, Scope: hotlimit.PerAPI},
	}
	strict := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}
	return append(limits[:at:at], append([]hotlimit.Config{strict}, limits[at:]...)...)
}

// TestDenialOnRedisInTwoRoundTrips: a request that one of a service rule's
// limits on one Redis client denies costs two round trips wherever the
// denier is: one for the takes, one for the give-backs of the others, each
// of which is that limit's report too; a report (n = 0) costs one. Asked
// one by one, the same requests cost more.
func TestDenialOnRedisInTwoRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	rules := service.Rules{Default: denierAt(0), APIs: map[string]service.Limits{}}
	apis := []string{"GET /first", "GET /middle", "GET /last"}
	for at, api := range apis {
		rules.APIs[api] = denierAt(at)
	}
	ctx := context.Background()
	// cost returns the round trips and the script calls of a request.
	cost := func(svc *service.Service, user, api string, n int) (int64, int64) {
		before, scripts := trips.pipelines.Load()+trips.singles.Load(), trips.scripts.Load()
		_, err := svc.TakeContext(ctx, user, api, n)
		require.NoError(t, err)
		return trips.pipelines.Load() + trips.singles.Load() - before, trips.scripts.Load() - scripts
	}
	opts := []hotlimit.Option{redislimit.WithTimeout(exactTimeout)}
	for _, together := range []bool{true, false} {
		f := redislimit.Factory(client, append(opts, redislimit.WithPrefix("together:"))...)
		if !together {
			f = oneByOneFactory(client, append(opts, redislimit.WithPrefix("apart:"))...)
		}
		svc, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(f))
		require.NoError(t, err)
		t.Cleanup(func() { _ = svc.Close() })
		for _, api := range apis {
			d, err := svc.TakeContext(ctx, "warm", api, 1) // loads the scripts
			require.NoError(t, err)
			require.True(t, d.Allowed)
			denial, denialScripts := cost(svc, "warm", api, 1)
			report, reportScripts := cost(svc, "warm", api, 0)
			if together {
				assert.Equal(t, int64(2), denial, "%s: a denial's round trips", api)
				assert.Equal(t, int64(5), denialScripts, "%s: 3 takes, 2 give-backs that report", api)
				assert.Equal(t, int64(1), report, "%s: a report's round trips", api)
				assert.Equal(t, int64(3), reportScripts, "%s: a report's script calls", api)
			} else {
				assert.Greater(t, denial, int64(2), "%s: a denial's round trips, one by one", api)
				t.Logf("%s: one by one, a denial costs %d round trips", api, denial)
				assert.Equal(t, int64(3), report, "%s: a report's round trips, one by one", api)
			}
		}
	}
}

// TestCompositeDenialOnRedisInTwoRoundTrips: so for a composite.Limiter of
// children on one Redis client.
func TestCompositeDenialOnRedisInTwoRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	ctx := context.Background()
	for at := range 3 {
		var children []hotlimit.Limiter
		for _, c := range denierAt(at) {
			c.Scope = hotlimit.PerPair
			children = append(children, newExact(t, client, c, frozenClock(), redislimit.WithPrefix(t.Name()+string(rune('a'+at)))))
		}
		c, err := composite.New(children...)
		require.NoError(t, err)
		d, err := c.TakeContext(ctx, "k", 1) // loads the scripts
		require.NoError(t, err)
		require.True(t, d.Allowed)
		for n, want := range []int64{1, 2} { // a report, a denial
			before := trips.pipelines.Load() + trips.singles.Load()
			_, err := c.TakeContext(ctx, "k", n)
			require.NoError(t, err)
			assert.Equal(t, want, trips.pipelines.Load()+trips.singles.Load()-before, "denier %d, n=%d", at, n)
		}
	}
}
