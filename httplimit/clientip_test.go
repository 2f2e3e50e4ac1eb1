package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

func mustPrefix(t testing.TB, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	require.NoError(t, err)
	return p
}

// tagged returns the key ClientIP finds for want, an address or network in
// the tables below: tagged "ip", or "peer" when want is not an IP.
func tagged(want string) string {
	if _, err := netip.ParseAddr(want); err == nil {
		return "ip:" + want
	}
	if _, err := netip.ParsePrefix(want); err == nil {
		return "ip:" + want
	}
	return "peer:" + want
}

func TestClientIPWithoutProxies(t *testing.T) {
	key := httplimit.ClientIP()
	for i, tc := range []struct {
		remote string
		header []string
		want   string
	}{
		{"192.0.2.1:1234", nil, "192.0.2.1"},
		{"192.0.2.1", nil, "192.0.2.1"}, // no port
		{" 192.0.2.1:80 ", nil, "192.0.2.1"},
		{"[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},              // IPv4-mapped counts as IPv4
		{"[64:ff9b::192.0.2.1]:80", nil, "192.0.2.1"},            // so does IPv4 a translator embedded (RFC 6052)
		{"[64:ff9b::1:192.0.2.1]:80", nil, "64:ff9b::/64"},       // outside 64:ff9b::/96: no IPv4 in it
		{"[64:ff9b:1::192.0.2.1]:80", nil, "64:ff9b:1::/64"},     // the local-use prefix places it as its operator chose
		{"[2001:db8:1:2:3:4:5:6]:443", nil, "2001:db8:1:2::/64"}, // IPv6 grouped by /64
		{"[2001:db8:1:2:ffff::1]:443", nil, "2001:db8:1:2::/64"}, // same /64, same key
		{"[2001:db8:1:3::1]:443", nil, "2001:db8:1:3::/64"},
		{"2001:db8:1:2::9", nil, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::9]", nil, "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", nil, "fe80::/64"}, // zone dropped
		{"[::1]:80", nil, "::/64"},
		{"@", nil, "@"}, // not an address: used as is
		{"not an address", nil, "not an address"},
		// Forwarding headers from a peer nobody trusts change nothing.
		{"192.0.2.1:1234", []string{"X-Forwarded-For", "198.51.100.7"}, "192.0.2.1"},
		{"192.0.2.1:1234", []string{"Forwarded", "for=198.51.100.7"}, "192.0.2.1"},
		{"192.0.2.1:1234", []string{"X-Real-Ip", "198.51.100.7"}, "192.0.2.1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for j := 0; j+1 < len(tc.header); j += 2 {
			r.Header.Add(tc.header[j], tc.header[j+1])
		}
		got, ok := key(r)
		assert.True(t, ok, "case %d", i)
		assert.Equal(t, tagged(tc.want), got, "case %d", i)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = ""
	_, ok := key(r)
	assert.False(t, ok, "an empty RemoteAddr finds no key")
}

func TestClientIPTrustedProxies(t *testing.T) {
	trusted := httplimit.TrustProxies(
		mustPrefix(t, "10.0.0.0/8"),
		mustPrefix(t, "2001:db8:ffff::/48"),
		mustPrefix(t, "::ffff:172.16.0.0/108"), // IPv4-mapped: matches 172.16.0.0/12
		netip.Prefix{},                         // invalid: ignored
	)
	xff := httplimit.ClientIP(trusted)
	fwd := httplimit.ClientIP(trusted, httplimit.ProxyHeader("forwarded"))
	real := httplimit.ClientIP(trusted, httplimit.ProxyHeader("X-Real-IP"))
	unnamed := httplimit.ClientIP(trusted, httplimit.ProxyHeader("")) // keeps X-Forwarded-For
	for i, tc := range []struct {
		key    httplimit.KeyFunc
		remote string
		header []string
		want   string
	}{
		// The peer is a trusted proxy: the rightmost untrusted entry is the client.
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7"}, "198.51.100.7"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "6.6.6.6, 198.51.100.7"}, "198.51.100.7"},          // a prepended spoof is ignored
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "6.6.6.6,198.51.100.7, 10.0.0.2"}, "198.51.100.7"}, // a chain of trusted proxies
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "6.6.6.6", "X-Forwarded-For", "198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}, "10.0.0.3"}, // all trusted: the leftmost
		{xff, "10.0.0.1:80", nil, "10.0.0.1"}, // no header: the proxy itself
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", ""}, "10.0.0.1"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7, garbage"}, "10.0.0.1"},           // garbage stops at the hop that wrote it
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7, garbage, 10.0.0.2"}, "10.0.0.2"}, // ... that hop
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7,"}, "10.0.0.1"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7:4711"}, "198.51.100.7"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "[2001:db8:1:2::7]:4711"}, "2001:db8:1:2::/64"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "2001:db8:1:2::7"}, "2001:db8:1:2::/64"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "::ffff:198.51.100.7"}, "198.51.100.7"},
		{xff, "[2001:db8:ffff::1]:80", []string{"X-Forwarded-For", "198.51.100.7"}, "198.51.100.7"},
		{xff, "[::ffff:10.0.0.1]:80", []string{"X-Forwarded-For", "198.51.100.7"}, "198.51.100.7"},
		{xff, "172.20.0.1:80", []string{"X-Forwarded-For", "198.51.100.7"}, "198.51.100.7"},
		{xff, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7, 2001:db8:ffff::5"}, "198.51.100.7"},
		// The peer is not trusted: headers are ignored, whatever they say.
		{xff, "192.0.2.1:80", []string{"X-Forwarded-For", "198.51.100.7"}, "192.0.2.1"},
		{xff, "172.32.0.1:80", []string{"X-Forwarded-For", "198.51.100.7"}, "172.32.0.1"},
		{xff, "[2001:db8:fffe::1]:80", []string{"X-Forwarded-For", "198.51.100.7"}, "2001:db8:fffe::/64"},
		// Only the configured header counts.
		{xff, "10.0.0.1:80", []string{"Forwarded", "for=198.51.100.7", "X-Real-Ip", "198.51.100.8"}, "10.0.0.1"},
		{fwd, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7"}, "10.0.0.1"},
		{real, "10.0.0.1:80", []string{"X-Real-Ip", "198.51.100.8", "X-Forwarded-For", "198.51.100.7"}, "198.51.100.8"},
		{unnamed, "10.0.0.1:80", []string{"X-Forwarded-For", "198.51.100.7"}, "198.51.100.7"},
		// RFC 7239.
		{fwd, "10.0.0.1:80", []string{"Forwarded", "for=198.51.100.7"}, "198.51.100.7"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for=6.6.6.6, for=198.51.100.7;proto=https;by=10.0.0.1`}, "198.51.100.7"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `For="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for="[2001:db8:cafe::17]"`}, "2001:db8:cafe::/64"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for="198.51.100.7:80"; proto=http`}, "198.51.100.7"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `proto=http;by="a,b;c"; for=198.51.100.7`}, "198.51.100.7"}, // separators inside quotes
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for="\"198.51.100.7"`}, "10.0.0.1"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for="1\98.51.100.7"`}, "198.51.100.7"},                        // quoted-pair
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for=198.51.100.7;ext="a\",b", for=10.0.0.2`}, "198.51.100.7"}, // an escaped quote leaves the comma quoted
		{fwd, "10.0.0.1:80", []string{"Forwarded", "for=198.51.100.7, for=unknown"}, "10.0.0.1"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", "for=198.51.100.7, for=_hidden, for=10.0.0.2"}, "10.0.0.2"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", "for=198.51.100.7, proto=http"}, "10.0.0.1"}, // an element without for
		{fwd, "10.0.0.1:80", []string{"Forwarded", "for=6.6.6.6", "Forwarded", "for=198.51.100.7, for=10.0.0.5"}, "198.51.100.7"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", "for=10.0.0.9,for=10.0.0.5"}, "10.0.0.9"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for="unterminated`}, "10.0.0.1"},
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for=6.6.6.6, for="198.51.100.7:_conn1"`}, "198.51.100.7"}, // an obfuscated port hides no address
		{fwd, "10.0.0.1:80", []string{"Forwarded", `for="[2001:db8:cafe::17]:_p"`}, "2001:db8:cafe::/64"},
		{fwd, "192.0.2.1:80", []string{"Forwarded", "for=198.51.100.7"}, "192.0.2.1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for j := 0; j+1 < len(tc.header); j += 2 {
			r.Header.Add(tc.header[j], tc.header[j+1])
		}
		got, ok := tc.key(r)
		assert.True(t, ok, "case %d", i)
		assert.Equal(t, tagged(tc.want), got, "case %d", i)
	}
}

func TestClientIPPrefixes(t *testing.T) {
	for i, tc := range []struct {
		opts   []httplimit.IPOption
		remote string
		want   string
	}{
		{nil, "[2001:db8:1:2:3:4:5:6]:1", "2001:db8:1:2::/64"},
		{[]httplimit.IPOption{httplimit.IPv6Prefix(128)}, "[2001:db8:1:2:3:4:5:6]:1", "2001:db8:1:2:3:4:5:6"},
		{[]httplimit.IPOption{httplimit.IPv6Prefix(500)}, "[2001:db8:1:2:3:4:5:6]:1", "2001:db8:1:2:3:4:5:6"}, // clamped
		{[]httplimit.IPOption{httplimit.IPv6Prefix(48)}, "[2001:db8:1:2:3:4:5:6]:1", "2001:db8:1::/48"},
		{[]httplimit.IPOption{httplimit.IPv6Prefix(-3)}, "[2001:db8:1:2:3:4:5:6]:1", "::/1"}, // clamped
		{[]httplimit.IPOption{httplimit.IPv4Prefix(24)}, "192.0.2.77:1", "192.0.2.0/24"},
		{[]httplimit.IPOption{httplimit.IPv4Prefix(99)}, "192.0.2.77:1", "192.0.2.77"},
		{[]httplimit.IPOption{httplimit.IPv4Prefix(0)}, "192.0.2.77:1", "128.0.0.0/1"},  // clamped
		{[]httplimit.IPOption{httplimit.IPv4Prefix(-3)}, "192.0.2.77:1", "128.0.0.0/1"}, // clamped
		{[]httplimit.IPOption{httplimit.IPv4Prefix(24)}, "[::ffff:192.0.2.77]:1", "192.0.2.0/24"},
		{[]httplimit.IPOption{httplimit.IPv4Prefix(24)}, "[64:ff9b::192.0.2.77]:1", "192.0.2.0/24"},
		{[]httplimit.IPOption{httplimit.IPv6Prefix(128)}, "[64:ff9b::192.0.2.77]:1", "192.0.2.77"},
		{[]httplimit.IPOption{nil, httplimit.ProxyHeader("")}, "192.0.2.77:1", "192.0.2.77"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		got, ok := httplimit.ClientIP(tc.opts...)(r)
		assert.True(t, ok, "case %d", i)
		assert.Equal(t, tagged(tc.want), got, "case %d", i)
	}
}

func TestClientIPv4AllocatesNothing(t *testing.T) {
	// The tagged key of a client seen lately is reused, not built again.
	key := httplimit.ClientIP(httplimit.TrustProxies(mustPrefix(t, "10.0.0.0/8")))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:80"
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.0.0.2")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if k, _ := key(r); k != "ip:198.51.100.7" {
			panic(k)
		}
	}))
}

func TestClientIPv4FastPathAgreesWithNetip(t *testing.T) {
	// The hand-written dotted-quad parser accepts exactly what netip accepts,
	// and gives the same key.
	key := httplimit.ClientIP()
	for i, s := range []string{
		"0.0.0.0", "255.255.255.255", "1.2.3.4", "01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3", "1.2.3.4.5",
		"1..2.3", "1.2.3.", ".1.2.3", "1.2.3.4a", "1234.1.1.1", "1.2.3.4:0", "1.2.3.4:65535", "1.2.3.4:65536",
		"1.2.3.4:", "1.2.3.4:080", "1.2.3.4:1234567", "1.2.3.4:x", "1.2.3.4 :80", " 1.2.3.4 ", "1.2.3.4:-1",
		"192.168.000.1", "0.0.0.0:00000",
	} {
		var want string
		if a, err := netip.ParseAddr(s); err == nil {
			want = a.String()
		} else if ap, err := netip.ParseAddrPort(s); err == nil {
			want = ap.Addr().String()
		} else if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil {
			want = a.String()
		} else {
			want = s // not an address: used as is
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = s
		got, _ := key(r)
		assert.Equal(t, tagged(want), got, "case %d: %q", i, s)
	}
}

// TestForwardedUnterminatedQuoteCannotHideTheClient: a client behind a
// trusted proxy sends a Forwarded field that opens a quoted-string and never
// closes it. The proxy appends its element for the client to the same line,
// inside what reads as the client's quote. The element the proxy wrote must
// still be found, so that the client is keyed by its own address rather than
// the proxy's, whose quota every client through the proxy with such a header
// would otherwise share.
func TestForwardedUnterminatedQuoteCannotHideTheClient(t *testing.T) {
	fwd := httplimit.ClientIP(httplimit.TrustProxies(mustPrefix(t, "10.0.0.0/8")), httplimit.ProxyHeader("Forwarded"))
	for i, tc := range []struct{ header, want string }{
		{`for="198.51.100.66, for=203.0.113.9`, "203.0.113.9"},
		{`for="198.51.100.66\, for=203.0.113.9`, "203.0.113.9"}, // a quoted-pair eats the proxy's comma
		{`for="x, for="[2001:db8:cafe::17]:4711"`, "2001:db8:cafe::/64"},
		{`by="x;for=6.6.6.6, for=203.0.113.9, for=10.0.0.2`, "203.0.113.9"}, // two trusted hops
		{`proto=http;by="a,b;c"; for=198.51.100.7`, "198.51.100.7"},         // a terminated quote still holds separators
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "10.0.0.1:80"
		r.Header.Set("Forwarded", tc.header)
		got, ok := fwd(r)
		assert.True(t, ok, "case %d", i)
		assert.Equal(t, tagged(tc.want), got, "case %d: %s", i, tc.header)
	}
}

// TestProxyHeaderNameAsWritten: a header name with spaces or tabs around it,
// as a configuration file may hold it, names the header without them, in
// any case: the trusted proxy's X-Real-IP is read. A name with spaces
// around it never matched: net/http keys a request's header by the
// canonical name, and textproto leaves a name holding a space as it is. A
// name that is no field name (a space or a colon inside, a byte outside
// printable ASCII) names no header a request can carry: no header is read,
// and every client behind the proxy has the proxy's key; the default
// X-Forwarded-For, which a proxy that writes another header may pass
// through from the client, is not read in its place.
func TestProxyHeaderNameAsWritten(t *testing.T) {
	trusted := httplimit.TrustProxies(mustPrefix(t, "10.0.0.0/8"))
	r := get("/", "10.0.0.1:80", "X-Real-IP", "198.51.100.7", "X-Forwarded-For", "6.6.6.6")
	for _, name := range []string{" X-Real-IP", "X-Real-IP ", "\tx-real-ip\t", " X-REAL-IP "} {
		key, found := httplimit.ClientIP(trusted, httplimit.ProxyHeader(name))(r)
		assert.True(t, found, "%q", name)
		assert.Equal(t, "ip:198.51.100.7", key, "%q: the header the proxy wrote", name)
	}
	fwd := get("/", "10.0.0.1:80", "Forwarded", "for=198.51.100.8", "X-Forwarded-For", "6.6.6.6")
	key, _ := httplimit.ClientIP(trusted, httplimit.ProxyHeader(" forwarded "))(fwd)
	assert.Equal(t, "ip:198.51.100.8", key, "Forwarded, parsed as RFC 7239")
	for _, name := range []string{"X Real IP", "X-Real-IP:", "X-Réal-IP", "X-Real\x00IP"} {
		key, found := httplimit.ClientIP(trusted, httplimit.ProxyHeader(name))(r)
		assert.True(t, found, "%q", name)
		assert.Equal(t, "ip:10.0.0.1", key, "%q: no header read, not X-Forwarded-For", name)
	}
	for _, name := range []string{"", " ", "\t"} {
		key, _ := httplimit.ClientIP(trusted, httplimit.ProxyHeader(name))(r)
		assert.Equal(t, "ip:6.6.6.6", key, "%q: the default, X-Forwarded-For", name)
	}
}

// TestClientsTranslatedFromIPv4HaveTheirOwnQuota serves the middleware on
// a real loopback listener, as an IPv6-only server behind a proxy that a
// NAT64 or SIIT translator reaches: the proxy names each IPv4 client by the
// IPv6 address the translator gave it, its IPv4 address within the
// well-known prefix 64:ff9b::/96 (RFC 6052). Every such address lies in
// one /64, so grouped as IPv6 every IPv4 client of the internet would
// share one quota, and one of them would deny all the others; each is
// keyed by its IPv4 address instead, as an IPv4-mapped one is, so that a
// rule naming that address applies to it.
func TestClientsTranslatedFromIPv4HaveTheirOwnQuota(t *testing.T) {
	h, users := keyedBy(t, httplimit.ClientIP(httplimit.TrustProxies(mustPrefix(t, "127.0.0.0/8"))), "ip:198.51.100.9", 2)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(client string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("64:ff9b::203.0.113.7"))
	assert.Equal(t, http.StatusOK, get("64:ff9b::c633:6409"), "another IPv4 client: a quota of its own")
	assert.Equal(t, http.StatusOK, get("64:ff9b::198.51.100.9"), "its rule applies: 2 a minute")
	assert.Equal(t, http.StatusTooManyRequests, get("64:ff9b::203.0.113.7"), "the first client has spent its own")
	assert.Equal(t, []string{"ip:203.0.113.7", "ip:198.51.100.9", "ip:198.51.100.9", "ip:203.0.113.7"}, *users)
}

// TestTranslatedClientIsItsIPv4Address pins what the docs say of an
// address within 64:ff9b::/96: it is the client at the IPv4 address it
// holds, so it spends one quota with that address reaching the server
// directly, under IPv6Prefix(128) too; and trust is asked of it as
// written, so a proxy behind a translator is trusted by its 64:ff9b::
// address, not by its IPv4 one.
func TestTranslatedClientIsItsIPv4Address(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	h := httplimit.New(svc, httplimit.WithUser(httplimit.ClientIP(httplimit.IPv6Prefix(128))))(ok)
	assert.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code)
	assert.Equal(t, http.StatusTooManyRequests, serve(h, get("/", "[64:ff9b::c000:201]:2")).Code, "one client, one quota")

	r := get("/", "[64:ff9b::a00:1]:80", "X-Forwarded-For", "198.51.100.1")
	key, _ := httplimit.ClientIP(httplimit.TrustProxies(mustPrefix(t, "10.0.0.0/8")))(r)
	assert.Equal(t, "ip:10.0.0.1", key, "an IPv4 prefix does not trust the proxy's translated address")
	key, _ = httplimit.ClientIP(httplimit.TrustProxies(mustPrefix(t, "64:ff9b::a00:0/120")))(r)
	assert.Equal(t, "ip:198.51.100.1", key, "its 64:ff9b:: prefix does")
}
