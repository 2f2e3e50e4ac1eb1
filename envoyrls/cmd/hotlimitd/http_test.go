package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startHTTP runs hotlimitd with one rule of domain web and returns the base
// URL of its HTTP server on loopback.
func startHTTP(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeRule(t, dir, "1000000")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, io.Discard)
	return "http://" + srv.http
}

// descriptors returns a /json body of n descriptors of entries entries each.
func descriptors(n, entries int) string {
	entry := `{"key":"ip","value":"1"}`
	d := `{"entries":[` + strings.TrimSuffix(strings.Repeat(entry+",", entries), ",") + `]}`
	return `{"domain":"web","descriptors":[` + strings.TrimSuffix(strings.Repeat(d+",", n), ",") + `]}`
}

// TestHTTPRefusals: what a careless or hostile client sends the HTTP
// server gets a 4xx naming the reason, and the server goes on answering.
func TestHTTPRefusals(t *testing.T) {
	base := startHTTP(t)
	valid := `{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"1"}]}]}`
	big := `{"domain":"web","descriptors":[],"x":"` + strings.Repeat("a", 1<<20) + `"}`
	deep := `{"domain":"web","descriptors":[` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]}`
	for _, tc := range []struct {
		name, method, path, ctype string
		body                      io.Reader
		want                      int
		says                      string
	}{
		{"json by GET", "GET", "/json", "", nil, http.StatusMethodNotAllowed, "use POST"},
		{"json by PUT", "PUT", "/json", "application/json", strings.NewReader(valid), http.StatusMethodNotAllowed, "use POST"},
		{"xml", "POST", "/json", "text/xml", strings.NewReader(`<domain>web</domain>`), http.StatusUnsupportedMediaType, `Content-Type "text/xml"`},
		{"multipart", "POST", "/json", "multipart/form-data; boundary=x", strings.NewReader("--x\r\n"), http.StatusUnsupportedMediaType, "application/json"},
		{"unparsable type", "POST", "/json", "application/", strings.NewReader(`domain=web`), http.StatusUnsupportedMediaType, "Content-Type"},
		// The reference reads the body whatever its Content-Type: a JSON
		// body is answered under any, as clients' defaults send it.
		{"json under xml", "POST", "/json", "text/xml", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"octet-stream", "POST", "/json", "application/octet-stream", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"text/json", "POST", "/json", "text/json", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"bad parameter", "POST", "/json", "application/json; charset", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"upper case", "POST", "/json", "Application/JSON; Charset=UTF-8", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"fetch's text", "POST", "/json", "text/plain;charset=UTF-8", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"json, invalid", "POST", "/json", "application/problem+json", strings.NewReader(`<x/>`), http.StatusBadRequest, "invalid RateLimitRequest JSON"},
		{"json", "POST", "/json", "application/json; charset=utf-8", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"no type", "POST", "/json", "", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"curl -d", "POST", "/json", "application/x-www-form-urlencoded", strings.NewReader(valid), http.StatusOK, `"overallCode":"OK"`},
		{"truncated", "POST", "/json", "application/json", strings.NewReader(`{"domain":`), http.StatusBadRequest, "invalid RateLimitRequest JSON"},
		{"not json", "POST", "/json", "application/json", strings.NewReader(`domain=web`), http.StatusBadRequest, "invalid RateLimitRequest JSON"},
		{"empty", "POST", "/json", "application/json", strings.NewReader(``), http.StatusBadRequest, "invalid RateLimitRequest JSON"},
		{"unknown field", "POST", "/json", "application/json", strings.NewReader(`{"domain":"web","bogus":1}`), http.StatusBadRequest, "bogus"},
		{"wrong type", "POST", "/json", "application/json", strings.NewReader(`{"domain":5}`), http.StatusBadRequest, "invalid RateLimitRequest JSON"},
		{"no descriptors", "POST", "/json", "application/json", strings.NewReader(`{"domain":"web"}`), http.StatusBadRequest, "descriptor list must not be empty"},
		{"over 1 MiB", "POST", "/json", "application/json", strings.NewReader(big), http.StatusRequestEntityTooLarge, "at most 1048576"},
		{"over 1 MiB, chunked", "POST", "/json", "application/json", io.MultiReader(strings.NewReader(big)), http.StatusRequestEntityTooLarge, "larger than 1048576"},
		{"1025 descriptors", "POST", "/json", "application/json", strings.NewReader(descriptors(1025, 1)), http.StatusBadRequest, "more than 1024 descriptors"},
		{"1024 descriptors", "POST", "/json", "application/json", strings.NewReader(descriptors(1024, 1)), http.StatusOK, `"overallCode"`},
		{"65 entries", "POST", "/json", "application/json", strings.NewReader(descriptors(2, 65)), http.StatusBadRequest, "more than 64 entries"},
		{"nested", "POST", "/json", "application/json", strings.NewReader(deep), http.StatusBadRequest, "nested deeper than 8"},
		{"healthcheck by POST", "POST", "/healthcheck", "", nil, http.StatusMethodNotAllowed, "Method Not Allowed"},
		{"healthcheck by HEAD", "HEAD", "/healthcheck", "", nil, http.StatusOK, ""},
		{"metrics by DELETE", "DELETE", "/metrics", "", nil, http.StatusMethodNotAllowed, "Method Not Allowed"},
		{"rlconfig", "GET", "/rlconfig", "", nil, http.StatusOK, "web.ip: unit=HOUR requests_per_unit=1000000, shadow_mode: false, quota_mode: false, policy: FixedWindow 1000000/1h0m0s\n"},
		{"rlconfig by POST", "POST", "/rlconfig", "", nil, http.StatusMethodNotAllowed, "Method Not Allowed"},
		{"no such path", "GET", "/debug/pprof/", "", nil, http.StatusNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, tc.body)
			require.NoError(t, err)
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Equal(t, tc.want, res.StatusCode, "%s", body)
			assert.Contains(t, string(body), tc.says)
			if tc.want == http.StatusMethodNotAllowed {
				assert.NotEmpty(t, res.Header.Get("Allow"))
			}
		})
	}
	res, err := http.Get(base + "/healthcheck")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "still serving")
}

// TestJSONHugeDescriptorListMemory: a 1 MiB body of empty descriptors,
// which would decode into some 50 MB, is refused having cost the server
// little more than the body itself.
func TestJSONHugeDescriptorListMemory(t *testing.T) {
	base := startHTTP(t)
	body := []byte(`{"domain":"web","descriptors":[` + strings.Repeat(`{},`, (1<<20-40)/3) + `{}]}`)
	require.LessOrEqual(t, len(body), 1<<20)
	post := func() (int, string) {
		res, err := http.Post(base+"/json", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		defer res.Body.Close()
		msg, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(msg)
	}
	post() // the connection and the server's buffers, once
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, msg := post()
	runtime.ReadMemStats(&after)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, msg, "more than 1024 descriptors")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes for a body of %d", alloc, len(body))
	assert.Less(t, alloc, uint64(8<<20), "bounded by the body, not by what it would decode into")
}

// TestHTTPSlowClients: a client that sends its headers too slowly, its body
// too slowly, or keeps an idle connection open, is cut off once the
// server's bound passes; a header block over the bound gets 431. Each case
// has a server of its own with only the bound it is about shortened (100 ms
// for the headers, 300 ms for the others): the others keep their defaults,
// so that a loaded machine's delay between the dial and the write cannot
// end a request by a bound it is not about (a 408 where 200 or 431 is due).
func TestHTTPSlowClients(t *testing.T) {
	saved := httpLimits
	t.Cleanup(func() { httpLimits = saved })
	// cutOff starts a server with the limits that shorten sets, sends it
	// what, then requires the server to end the connection, perhaps after
	// a response whose status line it returns ("" for none).
	cutOff := func(t *testing.T, shorten func(), what string) string {
		t.Helper()
		httpLimits = saved
		shorten()
		addr := strings.TrimPrefix(startHTTP(t), "http://")
		httpLimits = saved
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, what)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
		r := bufio.NewReader(conn)
		status, _ := r.ReadString('\n')
		_, err = io.Copy(io.Discard, r)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open")
		return status
	}
	t.Run("headers", func(t *testing.T) {
		st := cutOff(t, func() { httpLimits.readHeader = 100 * time.Millisecond }, "POST /json HTTP/1.1\r\nHost: h\r\n")
		assert.True(t, st == "" || strings.Contains(st, " 408 "), "%q", st)
	})
	t.Run("body", func(t *testing.T) {
		st := cutOff(t, func() { httpLimits.read = 300 * time.Millisecond },
			"POST /json HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"domain\"")
		assert.True(t, st == "" || strings.Contains(st, " 400 "), "%q", st)
	})
	t.Run("idle", func(t *testing.T) {
		st := cutOff(t, func() { httpLimits.idle = 300 * time.Millisecond }, "GET /healthcheck HTTP/1.1\r\nHost: h\r\n\r\n")
		assert.Contains(t, st, " 200 ", "answered, then closed once idle")
	})
	t.Run("headers too large", func(t *testing.T) {
		st := cutOff(t, func() {}, "GET /healthcheck HTTP/1.1\r\nHost: h\r\nX-Big: "+strings.Repeat("a", 200<<10)+"\r\n\r\n")
		assert.Contains(t, st, " 431 ")
	})
}

// TestJSONWaitsOutTheRedisTimeout: a /json request whose decision waits for
// a Redis that accepts connections and never answers gets an answer (the
// failure policy's) once -redis-timeout passes, even when that is longer
// than the HTTP server's write bound: the write bound covers the wait, so
// the client is not left with a connection closed under its request. (The
// bound is 1 s past the Redis timeout, so that a loaded machine's delays
// do not close it; without the wait counted, it would close 1 s before.)
func TestJSONWaitsOutTheRedisTimeout(t *testing.T) {
	saved := httpLimits
	t.Cleanup(func() { httpLimits = saved })
	httpLimits.write = time.Second
	redisAddr, _ := startRedis(t, "")
	silent, silence := silentProxy(t, redisAddr)
	dir := t.TempDir()
	writeRule(t, dir, "10")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0",
		"-redis", silent, "-redis-timeout", "2s"}, io.Discard)
	silence()
	body := `{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"1"}]}]}`
	start := time.Now()
	resp, err := http.Post("http://"+srv.http+"/json", "application/json", strings.NewReader(body))
	require.NoError(t, err, "an answer, not a connection closed under the request")
	defer resp.Body.Close()
	assert.GreaterOrEqual(t, resp.StatusCode, 500, "Redis could not decide")
	assert.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "the decision waited for Redis")
}
