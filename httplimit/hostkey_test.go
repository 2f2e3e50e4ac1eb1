package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/httplimit"
)

// TestHostKeyIsCanonical serves a quota of one request a minute per host,
// keyed by Header("Host"), on real servers over loopback: over TLS with
// HTTP/1.1 and HTTP/2, and over plain HTTP/1.1. "example.com",
// "example.com.", "example.com:443" and "example.com:80" name one host,
// over either scheme, and each was a key of its own: a client that writes
// its Host header got a fresh quota per spelling, four and more (":0443",
// an empty port), and a rule naming the host missed all but one. They now
// share the quota of HeaderKey("Host", "example.com"), which is
// HeaderKey("Host", "example.com:443"): a rule written with the port
// names the host. Over plain HTTP, ":443" is what a proxy that ends TLS
// forwards, and over TLS ":80" is the same host; both were keys of their
// own, and a rule written "example.com:443" never matched a request over
// TLS. A port other than 443 and 80 is a host of its own; an IPv6 literal
// keeps its brackets and loses its default port.
func TestHostKeyIsCanonical(t *testing.T) {
	const (
		pass = http.StatusOK
		deny = http.StatusTooManyRequests
	)
	type sent struct {
		host   string
		status int
		user   string
	}
	example := httplimit.HeaderKey("Host", "example.com")
	require.Equal(t, "header:host:example.com", example)
	require.Equal(t, example, httplimit.HeaderKey("Host", "Example.com.:0443"))
	require.Equal(t, example, httplimit.HeaderKey("Host", "example.com:80"))
	overTLS := []sent{
		{"example.com", pass, example},
		{"EXAMPLE.com.", deny, example},
		{"example.com:443", deny, example},
		{"Example.Com.:0443", deny, example},
		{"example.com:", deny, example},
		{"example.com:8443", pass, "header:host:example.com:8443"},
		{"example.com.:8443", deny, "header:host:example.com:8443"},
		{"example.com:80", deny, example},
		{"[::1]:443", pass, "header:host:[::1]"},
		{"[0:0::1]", deny, "header:host:[::1]"},
		{"[::1]:8443", pass, "header:host:[::1]:8443"},
	}
	overHTTP := []sent{
		{"example.com", pass, example},
		{"EXAMPLE.com.", deny, example},
		{"example.com:80", deny, example},
		{"example.com.:080", deny, example},
		{"example.com:443", deny, example},
		{"example.com:8080", pass, "header:host:example.com:8080"},
		{"[::1]:80", pass, "header:host:[::1]"},
		{"[::1]", deny, "header:host:[::1]"},
	}
	for _, c := range []struct {
		name     string
		tls, h2  bool
		requests []sent
	}{
		{"TLS HTTP/1.1", true, false, overTLS},
		{"TLS HTTP/2", true, true, overTLS},
		{"HTTP/1.1", false, false, overHTTP},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, users := keyedBy(t, httplimit.Header("Host"), "", 0)
			srv := httptest.NewUnstartedServer(h)
			if c.tls {
				srv.EnableHTTP2 = c.h2
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			for _, s := range c.requests {
				req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				req.Host = s.host
				resp, err := srv.Client().Do(req)
				require.NoError(t, err, "%q", s.host)
				_ = resp.Body.Close()
				require.Equal(t, map[bool]int{false: 1, true: 2}[c.h2], resp.ProtoMajor)
				require.Equal(t, c.tls, resp.TLS != nil)
				assert.Equal(t, s.status, resp.StatusCode, "%q", s.host)
				if assert.NotEmpty(t, *users, "%q", s.host) {
					assert.Equal(t, s.user, (*users)[len(*users)-1], "%q", s.host)
				}
			}
		})
	}
}
