package envoyrls

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeadersSkipALimitRedisCouldNotDecide: with the hour limits on Redis
// and the minute limits in memory (a factory sends each where it goes), and
// Redis gone, a Redis limit fails open (WithBackendErrors(false),
// redislimit.FailOpen): its status reports the failure policy's Remaining
// of 0, which counts nothing. The headers advertise the memory limit that
// decided, whichever order the descriptors come in, not the one that could
// not, nor one whose negative hits Redis could not give back; a failed
// limit is advertised only when no limit decided (its limit alone), or
// when it denies the request (FailClosed, with its numbers).
func TestHeadersSkipALimitRedisCouldNotDecide(t *testing.T) {
	addr, redisServer := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	cfg := configOf(t, "mixed.yaml", `
domain: mixed
descriptors:
  - key: mem
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: red
    rate_limit: {unit: hour, requests_per_unit: 100}
  - key: red2
    rate_limit: {unit: hour, requests_per_unit: 50}
`)
	var now atomic.Int64
	now.Store(t0)
	s := mixedServer(t, cfg, &now, client, redislimit.FailOpen, HeadersReference)
	closed := mixedServer(t, cfg, &now, client, redislimit.FailClosed, HeadersReference)
	ask := func(keys ...string) (*pb.RateLimitResponse, map[string]string) {
		t.Helper()
		return askKeys(t, s, "mixed", false, keys...)
	}

	_, got := ask("mem", "red")
	assert.Equal(t, "99", got["RateLimit-Remaining"], "Redis up: red, 99 of 100 left, has the least remaining")
	assert.Equal(t, "100", got["RateLimit-Limit"])

	redisServer.Kill()
	resp, got := ask("mem", "red") // mem 998 left, red 0 by the failure policy
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "FailOpen admits")
	require.Equal(t, uint32(0), resp.Statuses[1].LimitRemaining, "the failure policy's Remaining")
	assert.Equal(t, map[string]string{"RateLimit-Limit": "1000", "RateLimit-Remaining": "998", "RateLimit-Reset": "59"}, got,
		"mem decided; red could not")
	_, got = ask("red", "mem")
	assert.Equal(t, map[string]string{"RateLimit-Limit": "1000", "RateLimit-Remaining": "997", "RateLimit-Reset": "59"}, got,
		"in either order")
	_, got = ask("red", "red2", "mem")
	assert.Equal(t, "1000", got["RateLimit-Limit"], "beside two that could not, in one pipeline")
	assert.Equal(t, "996", got["RateLimit-Remaining"])

	req := &pb.RateLimitRequest{Domain: "mixed", Descriptors: []*rlext.RateLimitDescriptor{
		{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "red", Value: "v"}}, IsNegativeHits: true},
		{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "mem", Value: "v"}}},
	}}
	resp, err := s.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, resp.ResponseHeadersToAdd, 3)
	assert.Equal(t, "1000", resp.ResponseHeadersToAdd[0].Value, "nor a give-back Redis could not take")
	assert.Equal(t, "995", resp.ResponseHeadersToAdd[1].Value)

	_, got = ask("red2", "red")
	assert.Equal(t, map[string]string{"RateLimit-Limit": "50"}, got,
		"none decided: the first with the least remaining, as before, without its failure policy's numbers")

	s = closed
	resp, got = ask("mem", "red")
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "FailClosed denies")
	assert.Equal(t, map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "3599"}, got,
		"red denied the request, though it could not decide: the denial is its")
}

// TestHeadersNameAQuotaDenialRedisCouldNotDecide: a descriptor in quota
// mode over its limit denies the request when every one in quota mode is
// (the reference's rule), also when Redis could not decide it and its
// failure policy put it over (FailClosed, or FailLocal's own count spent).
// The request is denied by that descriptor, so the headers name it, as
// they name any denial, not the in-memory limit beside it with 998 left:
// a 429 that says RateLimit-Remaining: 998 tells the client to retry.
func TestHeadersNameAQuotaDenialRedisCouldNotDecide(t *testing.T) {
	client := downClient(t)
	cfg := configOf(t, "quota.yaml", `
domain: quota
descriptors:
  - key: mem
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: red
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
`)
	var now atomic.Int64
	now.Store(t0)
	for _, policy := range []redislimit.FailPolicy{redislimit.FailClosed, redislimit.FailLocal} {
		t.Run(policy.String(), func(t *testing.T) {
			s := mixedServer(t, cfg, &now, client, policy, HeadersReference)
			ask := func(keys ...string) (*pb.RateLimitResponse, map[string]string) {
				t.Helper()
				return askKeys(t, s, "quota", false, keys...)
			}
			if policy == redislimit.FailLocal {
				// The local count's one request: passed, red's numbers
				// its failure policy's, mem's are named.
				resp, got := ask("mem", "red")
				require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
				assert.Equal(t, "999", got["RateLimit-Remaining"], "red could not decide, and passed")
			}
			denial := map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "3599"}
			resp, got := ask("mem", "red")
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "red, the only descriptor in quota mode, is over")
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.Statuses[1].Code)
			assert.Equal(t, denial, got, "red denied the request")
			resp, got = ask("red", "mem")
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode)
			assert.Equal(t, denial, got, "in either order")
		})
	}
}

// TestHeadersGiveNoNumbersOfALimitRedisCouldNotDecide: with Redis down
// (a dialer that fails), a limit on Redis is decided by its failure
// policy: FailOpen passes with a Remaining of 0, FailLocal by a count of
// its own. Neither is a count Redis keeps, so when the headers name such a
// limit (no descriptor of the request was decided) and it does not deny
// the request, they give its limit and policy but no remaining or reset,
// as httplimit writes a limit that could not decide: RateLimit-Limit and
// RateLimit-Policy, without RateLimit-Remaining, RateLimit-Reset and
// RateLimit. A decided descriptor beside it is named with its numbers, in
// either order, and one that denies the request (FailClosed) with its own.
func TestHeadersGiveNoNumbersOfALimitRedisCouldNotDecide(t *testing.T) {
	client := downClient(t)
	cfg := configOf(t, "undecided.yaml", `
domain: undecided
descriptors:
  - key: mem
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: red
    rate_limit: {unit: hour, requests_per_unit: 100}
  - key: red2
    rate_limit: {unit: hour, requests_per_unit: 50}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
`)
	var now atomic.Int64
	now.Store(t0)
	// ask sends the descriptors of keys to a server whose hour limits are
	// on Redis, under policy, its minute limit in memory, and returns the
	// response and its headers.
	ask := func(t *testing.T, policy redislimit.FailPolicy) func(refund bool, keys ...string) (*pb.RateLimitResponse, map[string]string) {
		s := mixedServer(t, cfg, &now, client, policy, HeadersReference|HeadersDraft)
		return func(refund bool, keys ...string) (*pb.RateLimitResponse, map[string]string) {
			t.Helper()
			return askKeys(t, s, "undecided", refund, keys...)
		}
	}
	red := map[string]string{"RateLimit-Limit": "100", "RateLimit-Policy": `"fixedwindow-100-1h";q=100;w=3600`}
	red2 := map[string]string{"RateLimit-Limit": "50", "RateLimit-Policy": `"fixedwindow-50-1h";q=50;w=3600`}
	shadow := map[string]string{"RateLimit-Limit": "1", "RateLimit-Policy": `"fixedwindow-1-1h";q=1;w=3600`}
	mem := func(left int) map[string]string {
		r := strconv.Itoa(left)
		return map[string]string{
			"RateLimit-Limit": "1000", "RateLimit-Remaining": r, "RateLimit-Reset": "59",
			"RateLimit-Policy": `"fixedwindow-1000-1m";q=1000;w=60`, "RateLimit": `"fixedwindow-1000-1m";r=` + r + ";t=59",
		}
	}
	for _, policy := range []redislimit.FailPolicy{redislimit.FailOpen, redislimit.FailLocal} {
		t.Run(policy.String(), func(t *testing.T) {
			ask := ask(t, policy)
			resp, got := ask(false, "red")
			require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "the failure policy passes")
			assert.Equal(t, red, got, "red alone could not decide: its limit and policy, no numbers")

			resp, got = ask(false, "red2", "red")
			require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
			assert.Equal(t, red2, got, "none decided: the one named, red2, without its numbers")
			_, got = ask(false, "red", "red2")
			assert.Contains(t, []map[string]string{red, red2}, got, "in either order")

			_, got = ask(false, "mem", "red")
			assert.Equal(t, mem(999), got, "mem decided: named, with its numbers")
			_, got = ask(false, "red", "mem")
			assert.Equal(t, mem(998), got, "in either order")

			_, got = ask(true, "red")
			assert.Equal(t, red, got, "nor a give-back Redis could not take")

			for range 2 { // FailLocal's count of 1 is over the second time
				resp, got = ask(false, "shadow")
				require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "shadow mode passes")
				assert.Equal(t, shadow, got, "a shadow limit that could not decide")
			}
		})
	}
	t.Run("closed", func(t *testing.T) {
		ask := ask(t, redislimit.FailClosed)
		resp, got := ask(false, "red")
		require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "FailClosed denies")
		assert.Equal(t, map[string]string{
			"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "3599",
			"RateLimit-Policy": `"fixedwindow-100-1h";q=100;w=3600`, "RateLimit": `"fixedwindow-100-1h";r=0;t=3599`,
		}, got, "red denied the request, though it could not decide: the denial is named with its numbers")
	})
}

// downClient returns a client of a Redis that is down: its dialer fails.
func downClient(t *testing.T) *redis.Client {
	down := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("redis is down") }
	client := redis.NewClient(&redis.Options{Addr: "redis:6379", Dialer: down, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// mixedServer returns a server of cfg, on the clock now, whose hour limits
// are on Redis (client, under policy, with the test's name as prefix) and
// whose shorter ones are in memory, with headers. A backend's error is no
// error of the call (WithBackendErrors(false)): the policy decides.
func mixedServer(t *testing.T, cfg *Config, now *atomic.Int64, client *redis.Client, policy redislimit.FailPolicy, headers Headers) *Server {
	t.Helper()
	redisLimits := redislimit.Factory(client, redislimit.WithFailPolicy(policy), redislimit.WithPrefix(t.Name()+":"))
	mixed := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Window >= time.Hour {
			return redisLimits(c, opts...)
		}
		return service.NewLimiter(c, opts...)
	}
	s, err := New(cfg, WithClock(now.Load), WithBackendErrors(false), WithHeaders(headers),
		WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(mixed)))
	require.NoError(t, err)
	return s
}

// askKeys sends s a request of domain with a descriptor {key: "v"} of each
// key, its hits given back when refund, and returns the response and its
// headers by name.
func askKeys(t *testing.T, s *Server, domain string, refund bool, keys ...string) (*pb.RateLimitResponse, map[string]string) {
	t.Helper()
	req := &pb.RateLimitRequest{Domain: domain}
	for _, k := range keys {
		d := desc(k, "v")
		d.IsNegativeHits = refund
		req.Descriptors = append(req.Descriptors, d)
	}
	resp, err := s.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	return resp, headersOf(resp)
}

// headersOf returns the headers resp adds, by name.
func headersOf(resp *pb.RateLimitResponse) map[string]string {
	got := map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	return got
}

// readFails is a limiter whose give-backs succeed and whose reads of a key
// (Take of 0) fail, its failure policy passing with a Remaining of 0, as
// redislimit's FailOpen does when Redis goes down between the two.
type readFails struct{ hotlimit.Limiter }

// RefundNowContext gives back nothing, and succeeds.
func (readFails) RefundNowContext(context.Context, string, int) error { return nil }

// TakeContext takes n; a read (n = 0) fails.
func (l readFails) TakeContext(_ context.Context, key string, n int) (hotlimit.Decision, error) {
	d := l.Take(key, n)
	if n == 0 {
		return hotlimit.Decision{Allowed: true, Limit: d.Limit}, errors.New("read failed")
	}
	return d, nil
}

// TestHeadersGiveNoNumbersOfAGiveBackWhoseReadFailed: negative hits given
// back, and the read of the key's state after them failed (its failure
// policy's Remaining of 0 counting nothing): with no other descriptor, the
// headers give the limit alone, as for a limit that could not decide, and
// not a RateLimit-Remaining of 0.
func TestHeadersGiveNoNumbersOfAGiveBackWhoseReadFailed(t *testing.T) {
	cfg := configOf(t, "readfails.yaml", `
domain: readfails
descriptors:
  - key: k
    rate_limit: {unit: minute, requests_per_unit: 100}
`)
	var now atomic.Int64
	now.Store(t0)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		return readFails{lim}, nil
	}
	s, err := New(cfg, WithClock(now.Load), WithBackendErrors(false), WithHeaders(HeadersReference),
		WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)
	resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "readfails", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}, IsNegativeHits: true,
	}}})
	require.NoError(t, err)
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	assert.Equal(t, map[string]string{"RateLimit-Limit": "100"}, headersOf(resp))
}
