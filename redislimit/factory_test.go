package redislimit_test

import (
	"fmt"
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

// burstRules are a fixed window (user "fw"), a token bucket without a burst
// (the default) and one with a burst of its own, its limit (api "own"):
// a service whose default burst is 5 lets 5 requests at once pass on the
// default, and the limit on the others.
func burstRules() service.Rules {
	tb := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	own := tb
	own.Burst = 10
	return service.Rules{
		Default: service.Limits{tb},
		Users:   map[string]service.Limits{"fw": {{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}}},
		APIs:    map[string]service.Limits{"own": {own}},
	}
}

// TestFactoryBurstIsTheServices: a hotlimit.WithBurst given to Factory
// rather than to the service is an error that says where it goes, for every
// rule set: not the fixed window's "the algorithm has no burst", which names
// no option the caller wrote for it, and not a service that builds where
// every limit is a token bucket, whose limiters then enforce a burst the
// service neither reports (the default's capacity 10, of a bucket of 5)
// nor keys by (the limit of api "own", whose own burst is its limit, is one
// limiter with the default's, of burst 5: 10 at once never pass). Given
// among the service's options, the burst is the default's alone, enforced
// in Redis and by the FailLocal limiter alike, and reported as the
// default's capacity.
func TestFactoryBurstIsTheServices(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	withFW, onlyTB := burstRules(), burstRules()
	onlyTB.Users = nil
	for name, rules := range map[string]service.Rules{"with a fixed window": withFW, "token buckets only": onlyTB} {
		for _, b := range []int{-1, 1, 5} { // any burst but none, a negative one too
			svc, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client, hotlimit.WithBurst(b))))
			if err == nil {
				_ = svc.Close()
			}
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, name)
			assert.ErrorContains(t, err, fmt.Sprintf("hotlimit.WithBurst(%d)", b), name)
			assert.ErrorContains(t, err, "among the service's options", name)
		}
	}

	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	for name, f := range map[string]hotlimit.Factory{
		"redis":     redislimit.Factory(client, redislimit.WithTimeout(exactTimeout)),
		"FailLocal": redislimit.Factory(down), // Redis unreachable
	} {
		svc, err := service.NewFromRules(withFW, frozenClock(), hotlimit.WithBurst(5), hotlimit.WithFactory(f))
		require.NoError(t, err, name)
		for _, tc := range []struct {
			capacity int
			pairs    [3]service.Pair // the rule's, each taken once
		}{
			{5, [3]service.Pair{{User: "bob", API: "a"}, {User: "bob", API: "b"}, {User: "bob", API: "c"}}},       // the default
			{10, [3]service.Pair{{User: "fw", API: "a"}, {User: "fw", API: "b"}, {User: "fw", API: "c"}}},         // users["fw"]
			{10, [3]service.Pair{{User: "bob", API: "own"}, {User: "eve", API: "own"}, {User: "al", API: "own"}}}, // apis["own"]
		} {
			p0, p1, p2 := tc.pairs[0], tc.pairs[1], tc.pairs[2]
			d, p := svc.TakePolicy(p0.User, p0.API, 1)
			assert.True(t, d.Allowed, "%s: %v", name, p0)
			assert.Equal(t, tc.capacity-1, d.Remaining, "%s: %v", name, p0)
			assert.Equal(t, tc.capacity, p.Capacity(), "%s: %v: the capacity reported", name, p0)
			assert.Equal(t, p, svc.ResolvePolicy(p0.User, p0.API), "%s: %v", name, p0)
			assert.True(t, svc.Take(p1.User, p1.API, tc.capacity).Allowed, "%s: %v: the capacity at once", name, p1)
			assert.Equal(t, hotlimit.Never, svc.Take(p2.User, p2.API, tc.capacity+1).RetryAfter, "%s: %v: never more", name, p2)
		}
		_ = svc.Close()
	}
}

// TestFactoryLeaseWhereItCan: a WithLease given to Factory is for the rules
// that can lease; a sliding log or counter among the rules is built without
// it, where New alone rejects a lease, instead of failing the whole rule set.
// Another instance, without a lease, sees what each took in Redis: the
// leased requests besides the one passed for the token bucket and the fixed
// window, the one passed for the others.
func TestFactoryLeaseWhereItCan(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	limit := func(a hotlimit.Algorithm) service.Limits {
		return service.Limits{{Algorithm: a, Limit: 10, Window: time.Minute}}
	}
	rules := service.Rules{Default: limit(hotlimit.TokenBucket), Users: map[string]service.Limits{
		"fw": limit(hotlimit.FixedWindow), "log": limit(hotlimit.SlidingLog), "ctr": limit(hotlimit.SlidingCounter),
	}}
	leased, err := service.NewFromRules(rules, frozenClock(),
		hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithLease(3, time.Second), redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = leased.Close() })
	plain, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	for user, left := range map[string]int{"bob": 6, "fw": 6, "log": 9, "ctr": 9} {
		require.True(t, leased.Allow(user, "a"), user)
		assert.Equal(t, left, plain.Take(user, "a", 0).Remaining, user)
	}

	// An invalid lease is an error still, for a limit it is not for too.
	_, err = service.NewFromRules(service.Rules{Default: limit(hotlimit.SlidingLog)},
		hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithLease(3, 0))))
	assert.ErrorContains(t, err, "WithLease ttl 0s: want more than 0 with size 3")
}

// TestFactoryBurstZeroKeepsTheServices: a hotlimit.WithBurst(0) among the
// factory's options, no burst of its own, leaves the service's default burst
// to the token buckets that set none, which the service reports as their
// capacity: it does not undo it, as it did when it came after the service's
// options, leaving a bucket of the limit whose reported capacity of 20
// never passed at once.
func TestFactoryBurstZeroKeepsTheServices(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	def := service.Limits{{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}}
	svc, err := service.NewFromRules(service.Rules{Default: def}, frozenClock(), hotlimit.WithBurst(20),
		hotlimit.WithFactory(redislimit.Factory(client, hotlimit.WithBurst(0), redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	d, p := svc.TakePolicy("bob", "a", 1)
	require.True(t, d.Allowed)
	assert.Equal(t, 20, p.Capacity(), "the capacity reported")
	assert.Equal(t, 19, d.Remaining)
	assert.True(t, svc.Take("eve", "a", 20).Allowed, "the capacity at once")
}

// TestFactoryLeaseTooShortForEvery: a lease New rejects for the limits that
// can lease, its ttl shorter than a tick of Redis's TIME, is an error for the
// sliding limits too, which the factory builds without it: a rule set of
// sliding limits alone built with it, and one that then gained a token bucket
// failed. Within a tick of the limiter's clock (a ns of hotlimit.WithClock's)
// it builds, and so does a lease of one tick of Redis's TIME.
func TestFactoryLeaseTooShortForEvery(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, a := range []hotlimit.Algorithm{hotlimit.SlidingLog, hotlimit.SlidingCounter, hotlimit.TokenBucket} {
		rules := service.Rules{Default: service.Limits{{Algorithm: a, Limit: 10, Window: time.Minute}}}
		_, err := service.NewFromRules(rules, hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithLease(3, 500*time.Nanosecond))))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", a)
		assert.ErrorContains(t, err, "the lease ttl 500ns is shorter than a tick of the clock, 1µs", "%v", a)
		svc, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithLease(3, 500*time.Nanosecond))))
		require.NoError(t, err, "%v", a)
		_ = svc.Close()
		svc, err = service.NewFromRules(rules, hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithLease(3, time.Microsecond))))
		require.NoError(t, err, "%v: a lease of one tick", a)
		_ = svc.Close()
	}
}
