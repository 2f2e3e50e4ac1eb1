package envoyrls

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestReloadOnRedisBetweenTheTakesAndTheirRefund: in all-or-nothing mode
// on Redis, a request of two descriptors has taken both in one pipeline
// and holds in the observer, hearing the second's denial, when a reload
// drops the first rule and closes its limiter (which gives back its lease,
// when it leases: its take is then its own round trip, not piped). The
// request then gives the first's hit back through that closed limiter, to
// Redis: once the first rule is back (its limiter new, its state Redis's),
// the client has its whole quota. The limiters read a frozen clock: on
// Redis's, the key refills while the request is held, and each of the two
// give-backs (the lease's, the hit's) deducts that refill, as a token
// bucket's give-back does, leaving the key a fraction of a token short.
func TestReloadOnRedisBetweenTheTakesAndTheirRefund(t *testing.T) {
	addr, _ := startRedis(t)
	for name, extra := range map[string][]hotlimit.Option{"piped": nil, "leasing": {redislimit.WithLease(3, time.Hour)}} {
		t.Run(name, func(t *testing.T) { reloadOnRedisBetweenTheTakesAndTheirRefund(t, addr, extra) })
	}
}

func reloadOnRedisBetweenTheTakesAndTheirRefund(t *testing.T, addr string, extra []hotlimit.Option) {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	const (
		first  = "  - key: first\n    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: TokenBucket}\n"
		second = "  - key: second\n    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: FixedWindow}\n"
	)
	parse := func(rules string) *Config {
		d, err := ParseDomain("m.yaml", []byte(rules))
		require.NoError(t, err)
		cfg, err := NewConfig(d)
		require.NoError(t, err)
		return cfg
	}
	before, after := parse("domain: m\ndescriptors:\n"+first+second), parse("domain: m\ndescriptors:\n"+second)

	var armed atomic.Bool
	reached, release := make(chan struct{}), make(chan struct{})
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) {
		if e.Source.Rule == "m.second" && !e.Decision.Allowed && armed.CompareAndSwap(true, false) {
			reached <- struct{}{}
			<-release
		}
	})
	var now atomic.Int64
	now.Store(int64(time.Hour))
	f := redislimit.Factory(client, append([]hotlimit.Option{redislimit.WithTimeout(10 * time.Second), redislimit.WithPrefix(t.Name() + ":")}, extra...)...)
	s, err := New(before, WithClock(now.Load), WithAllOrNothing(true), WithObserver(obs), WithLogger(slog.New(slog.DiscardHandler)),
		WithLimiterOptions(hotlimit.WithFactory(f)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	d1, d2 := desc("first", "c"), desc("second", "c")
	ask := func(ds ...*rlext.RateLimitDescriptor) *pb.RateLimitResponse {
		resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: ds})
		require.NoError(t, err)
		return resp
	}
	require.Equal(t, ok, ask(d2).OverallCode, "spends the second rule's one request")

	armed.Store(true)
	held := make(chan *pb.RateLimitResponse)
	go func() {
		resp, _ := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{d1, d2}})
		held <- resp
	}()
	select {
	case <-reached: // both taken in Redis, the second denied, no refund yet
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the second's denial was not heard")
	}
	require.NoError(t, s.Reload(after))
	close(release)
	resp := <-held
	require.NotNil(t, resp)
	assert.Equal(t, over, resp.OverallCode)

	require.NoError(t, s.Reload(before))
	passed := 0
	for range 6 {
		if ask(d1).OverallCode == ok {
			passed++
		}
	}
	assert.Equal(t, 5, passed, "the first's hit went back to Redis through the closed limiter")
}
