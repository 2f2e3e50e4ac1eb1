package redislimit_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// inMemoryWindow marks a limit that mixedFactory builds in memory: its window.
const inMemoryWindow = time.Minute + time.Second

// inMemoryAt builds the limits of window inMemoryWindow in memory
// (service.NewLimiter), the others by onRedis.
func inMemoryAt(onRedis hotlimit.Factory) hotlimit.Factory {
	return func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Window == inMemoryWindow {
			return service.NewLimiter(c, opts...)
		}
		return onRedis(c, opts...)
	}
}

// mixedRules mix limits in memory among two or more on Redis: first, in
// the middle, last; in shadow mode on either side.
var mixedRules = service.Rules{
	Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: inMemoryWindow},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.GCRA, Limit: 9, Window: time.Minute, Scope: hotlimit.PerAPI},
		{Algorithm: hotlimit.SlidingCounter, Limit: 7, Window: time.Minute},
	},
	APIs: map[string]service.Limits{
		"POST /mid": {
			{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: inMemoryWindow, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.GCRA, Limit: 8, Window: time.Minute, Scope: hotlimit.Global},
			{Algorithm: hotlimit.SlidingLog, Limit: 6, Window: time.Minute, Scope: hotlimit.PerAPI},
		},
		"POST /shadow": {
			{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Shadow: true},
			{Algorithm: hotlimit.SlidingCounter, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: inMemoryWindow, Shadow: true},
			{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute, Scope: hotlimit.Global},
		},
		"POST /last": {
			{Algorithm: hotlimit.GCRA, Limit: 4, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Shadow: true, Scope: hotlimit.PerAPI},
			{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
			{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: inMemoryWindow, Scope: hotlimit.PerAPI},
		},
	},
}

// TestServiceBatchMixedMatchesOneByOne: a rule mixing limits in memory
// with two or more on Redis, in shadow mode or not, decides what its twin
// asking every limit in turn decides, and its observer hears the same
// events: denials by a limit in memory before, between and after the limits
// on Redis, by a limit on Redis, requests beyond a limit's capacity, and
// reports.
func TestServiceBatchMixedMatchesOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	batched, single, bobs, sobs := twins(t, client, mixedRules, clock.Load, inMemoryAt)
	denials := runTwins(t, batched, single, bobs, sobs, &clock, []string{"ann", "bob"}, []string{"GET /any", "POST /mid", "POST /shadow", "POST /last"}, 3, 800)
	assert.Greater(t, denials, 150, "the sequence denies often enough to matter")
}
