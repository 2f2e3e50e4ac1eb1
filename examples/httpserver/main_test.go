package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneShot is the client of the tests that send requests one at a time: a
// connection per request, no keep-alive. A pooled client's transport dials a
// spare connection when a request finds none idle, and the request may then
// take the previous one, returned meanwhile; the spare stays open, unused,
// and the server's Shutdown waits 5 s for such a new connection to send a
// request before it counts it idle, failing serve with its deadline.
var oneShot = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// start serves newServer(c) on a loopback port, as run does, and returns its
// base URL.
func start(t *testing.T, c config) string {
	t.Helper()
	h, err := newServer(c)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-served, "serve after shutdown")
	})
	return "http://" + ln.Addr().String()
}

// TestServerTimeouts pins the timeouts of the server run starts: without
// them an idle or slow client holds its connection for ever.
func TestServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler())
	assert.Positive(t, srv.ReadHeaderTimeout, "ReadHeaderTimeout")
	assert.Positive(t, srv.ReadTimeout, "ReadTimeout")
	assert.Positive(t, srv.WriteTimeout, "WriteTimeout")
	assert.Positive(t, srv.IdleTimeout, "IdleTimeout")
}

// TestServeShutsDown cancels serve's context, as SIGINT does: serve returns
// nil, and the port no longer accepts requests.
func TestServeShutsDown(t *testing.T) {
	h, err := newServer(config{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h) }()

	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after its context was cancelled")
	}
	client.CloseIdleConnections()
	_, err = client.Get("http://" + ln.Addr().String() + "/")
	assert.Error(t, err, "a request after the shutdown")
}

func frozen(at time.Duration) *atomic.Int64 {
	var now atomic.Int64
	now.Store(int64(at))
	return &now
}

// outcome is what one request got.
type outcome struct {
	status    int
	rateLimit string
}

// TestEndToEnd sends many requests from 32 goroutines with a frozen clock and
// checks the exact number of 200s and 429s per user and route: with no time
// passing, each (user, API) pair gets exactly its limit, however the requests
// interleave.
func TestEndToEnd(t *testing.T) {
	now := frozen(1000*time.Second + 250*time.Millisecond) // 750 ms left in the fixed window
	base := start(t, config{clock: now.Load})

	total := 10000
	if testing.Short() {
		total = 2000
	}
	const workers = 32
	users := []string{"", "alice", "bob", "premium"} // "": no X-API-Key, so the client IP 127.0.0.1
	paths := []string{"/search", "/pay", "/", "/other/page"}
	api := map[string]string{"/search": "GET /search", "/pay": "GET /pay", "/": "/", "/other/page": "/"}

	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var mu sync.Mutex
	got := map[[2]string][]outcome{} // (user, api) -> outcomes
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < total; i += workers {
				user, path := users[i%len(users)], paths[i/len(users)%len(paths)]
				req, err := http.NewRequest(http.MethodGet, base+path, nil)
				if !assert.NoError(t, err) {
					return
				}
				if user != "" {
					req.Header.Set("X-API-Key", user)
				}
				resp, err := client.Do(req)
				if !assert.NoError(t, err, "request %d", i) {
					return
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				assert.NoError(t, err, "request %d", i)

				h := resp.Header
				assert.Len(t, h.Values("RateLimit-Policy"), 1, "request %d", i)
				assert.Len(t, h.Values("RateLimit"), 1, "request %d", i)
				switch resp.StatusCode {
				case http.StatusOK:
					assert.Empty(t, h.Get("Retry-After"), "request %d", i)
					assert.NotEmpty(t, body, "request %d", i)
				case http.StatusTooManyRequests:
					assert.Equal(t, "1", h.Get("Retry-After"), "request %d: every policy refills within a second", i)
					assert.Equal(t, "application/problem+json", h.Get("Content-Type"), "request %d", i)
					assert.Contains(t, string(body), `"status":429`, "request %d", i)
				default:
					assert.Fail(t, "unexpected status", "request %d: %d", i, resp.StatusCode)
				}
				mu.Lock()
				key := [2]string{user, api[path]}
				got[key] = append(got[key], outcome{resp.StatusCode, h.Get("RateLimit")})
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	// The policy, and so the exact number of 200s, of each (user, API).
	limits := map[string]map[string]string{
		"":        {"GET /search": "tokenbucket-5-1s", "GET /pay": "fixedwindow-3-1s", "/": "fixedwindow-3-1s"},
		"alice":   {"GET /search": "tokenbucket-5-1s", "GET /pay": "fixedwindow-3-1s", "/": "fixedwindow-3-1s"},
		"bob":     {"GET /search": "tokenbucket-5-1s", "GET /pay": "fixedwindow-3-1s", "/": "fixedwindow-3-1s"},
		"premium": {"GET /search": "tokenbucket-5-1s", "GET /pay": "tokenbucket-2-1s", "/": "fixedwindow-3-1s"},
	}
	allowed := map[string]int{"tokenbucket-5-1s": 5, "fixedwindow-3-1s": 3, "tokenbucket-2-1s": 2}
	perUser := map[string][2]int{} // user -> (200s, 429s)
	requests := 0
	for user, apis := range limits {
		for a, policy := range apis {
			outs := got[[2]string{user, a}]
			var ok []string
			denied := 0
			for _, o := range outs {
				if o.status == http.StatusOK {
					ok = append(ok, o.rateLimit)
				} else {
					denied++
					assert.Equal(t, fmt.Sprintf("%q;r=0;t=1", policy), o.rateLimit, "user %q api %q", user, a)
				}
			}
			// Each pass saw a distinct remaining count, from limit-1 down to 0.
			var want []string
			for r := range allowed[policy] {
				want = append(want, fmt.Sprintf("%q;r=%d;t=1", policy, r))
			}
			sort.Strings(ok)
			assert.Equal(t, want, ok, "user %q api %q", user, a)
			c := perUser[user]
			perUser[user] = [2]int{c[0] + len(ok), c[1] + denied}
			requests += len(outs)
		}
	}
	require.Equal(t, total, requests, "every request is accounted for")
	perPath := total / len(users)
	assert.Equal(t, map[string][2]int{
		"":        {11, perPath - 11}, // 5 search + 3 pay + 3 for "/" and "/other/page" together
		"alice":   {11, perPath - 11},
		"bob":     {11, perPath - 11},
		"premium": {10, perPath - 10}, // 5 search + 2 pay + 3
	}, perUser)

	// Time moves on: every quota is back.
	now.Add(int64(time.Second))
	resp, err := client.Get(base + "/pay")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `"fixedwindow-3-1s";r=2;t=1`, resp.Header.Get("RateLimit"))
}

func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	count := func(base string) []int {
		var codes []int
		for _, client := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"} {
			req, err := http.NewRequest(http.MethodGet, base+"/", nil)
			require.NoError(t, err)
			req.Header.Set("X-Forwarded-For", client)
			resp, err := oneShot.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			codes = append(codes, resp.StatusCode)
		}
		return codes
	}
	now := frozen(5 * time.Second)
	untrusted := start(t, config{clock: now.Load})
	assert.Equal(t, []int{200, 200, 200, 429}, count(untrusted), "a spoofed header does not make new users")

	trusted := start(t, config{clock: now.Load, trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	assert.Equal(t, []int{200, 200, 200, 200}, count(trusted), "behind a trusted proxy each client has its own quota")
}

func TestParsePrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"127.0.0.1", "127.0.0.1/32"},
		{"::1", "::1/128"},
	} {
		p, err := parsePrefix(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, p.String())
	}
	_, err := parsePrefix("nope")
	assert.Error(t, err)
}

// TestInventedAPIKeysShareTheClientQuota sends requests from one client,
// each with an X-API-Key of its own invention: an unknown key is no user, so
// they all count against the client's address, and inventing keys does not
// escape its limit.
func TestInventedAPIKeysShareTheClientQuota(t *testing.T) {
	now := frozen(5 * time.Second)
	base := start(t, config{clock: now.Load})
	var codes []int
	for _, key := range []string{"k1", "k2", "k3", "k4"} {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		require.NoError(t, err)
		req.Header.Set("X-API-Key", key)
		resp, err := oneShot.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes, "the client's quota of 3 per second, whatever keys it sends")

	// An issued key is a user of its own, apart from the client's address.
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", "alice")
	resp, err := oneShot.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
