package transport

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIPKey(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	for i, tc := range []struct {
		peer      string
		forwarded []string
		want      string
	}{
		{"192.0.2.1:1234", nil, "ip:192.0.2.1"},
		{"192.0.2.1:1234", []string{"198.51.100.7"}, "ip:192.0.2.1"}, // untrusted peer: ignored
		{"10.0.0.1:80", []string{"6.6.6.6, 198.51.100.7, 10.0.0.2"}, "ip:198.51.100.7"},
		{"[2001:db8:1:2::9]:80", nil, "ip:2001:db8:1:2::/64"},
		{"[::ffff:10.0.0.1]:80", []string{"2001:db8:1:2::7"}, "ip:2001:db8:1:2::/64"},
		{"[64:ff9b::192.0.2.1]:80", nil, "ip:192.0.2.1"}, // a translated IPv4 client (RFC 6052)
		{"10.0.0.1:80", []string{"64:ff9b::c633:6407"}, "ip:198.51.100.7"},
		// 64:ff9b:0:0:1::/80 lies in the /64 of 64:ff9b::/96 but outside it:
		// no translator's, an IPv6 address as any other
		{"[64:ff9b::1:0:c000:201]:80", nil, "ip:64:ff9b::/64"},
	} {
		a, text, ok := ParseAddr(tc.peer)
		assert.True(t, ok, "case %d", i)
		assert.Equal(t, tc.want, k.Key(a, text, tc.forwarded), "case %d", i)
		key, ok := k.PeerKey(tc.peer, func() []string { return tc.forwarded })
		assert.True(t, ok, "case %d", i)
		assert.Equal(t, tc.want, key, "case %d", i)
	}
	key, ok := k.PeerKey("@", nil)
	assert.True(t, ok)
	assert.Equal(t, "peer:@", key)
	_, ok = k.PeerKey("", nil)
	assert.False(t, ok)

	fwd := NewIP()
	fwd.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	fwd.SetForwarded(true)
	fwd.SetV4Bits(24)
	a, _, _ := ParseAddr("10.0.0.1")
	assert.Equal(t, "ip:198.51.100.0/24", fwd.Key(a, "", []string{`for=6.6.6.6, for="198.51.100.7:80"`}))
}

// TestRecentKeysNeverMixClients runs many goroutines over more clients than
// the recent-key slots, so slots are overwritten while others read them:
// every key must still be the caller's own.
func TestRecentKeysNeverMixClients(t *testing.T) {
	k := NewIP()
	const clients = 4 * recentKeys
	addrs := make([]netip.Addr, clients)
	want := make([]string, clients)
	for i := range clients {
		addrs[i] = netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
		want[i] = "ip:" + addrs[i].String()
	}
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for r := range rounds {
				for j := range clients {
					i := (j*7 + g + r) % clients
					if got := k.Key(addrs[i], "", nil); got != want[i] {
						t.Errorf("client %d: got %q, want %q", i, got, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	hits := 0
	for i := range recentKeys {
		if p := k.recent[i].Load(); p != nil {
			hits++
		}
	}
	assert.Positive(t, hits, "the slots were used")
}

func TestNonIPPeerKey(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	xff := func() []string { return []string{"6.6.6.6, 198.51.100.7, 10.0.0.2"} }
	key, ok := k.PeerKey("@", xff)
	assert.True(t, ok)
	assert.Equal(t, "peer:@", key, "an untrusted non-IP peer's header is not read")

	k.TrustNonIP(true)
	for i, tc := range []struct {
		peer      string
		forwarded []string
		key       string
		ok        bool
	}{
		{"@", []string{"6.6.6.6, 198.51.100.7, 10.0.0.2"}, "ip:198.51.100.7", true},
		{"@", []string{"10.0.0.3, 10.0.0.2"}, "ip:10.0.0.3", true}, // all trusted: the leftmost
		{"@", []string{"198.51.100.7, garbage"}, "peer:@", true},   // the proxy wrote no address
		{"@", nil, "peer:@", true},
		{"", []string{"198.51.100.7"}, "ip:198.51.100.7", true},
		{"", nil, "", false},
	} {
		key, ok := k.PeerKey(tc.peer, func() []string { return tc.forwarded })
		assert.Equal(t, tc.ok, ok, "case %d", i)
		assert.Equal(t, tc.key, key, "case %d", i)
	}
	k.SetForwarded(true)
	key, _ = k.NonIPKey("@", []string{`for=6.6.6.6, for="[2001:db8:1:2::7]:80"`})
	assert.Equal(t, "ip:2001:db8:1:2::/64", key)
}

// TestHugeForwardedHeaderCostsNoList: a client that sends a Forwarded field
// of 200,000 elements (through a trusted proxy, which appends its own) is
// found as with a short one, and the walk allocates nothing but the key,
// where a list of every element cost megabytes per request; an open quote,
// which splits the value at every comma, is bounded the same way. The walk
// reads the last MaxForwardedElements elements: a chain of more trusted
// proxies than that ends at the first of them it reads.
func TestHugeForwardedHeaderCostsNoList(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	k.SetForwarded(true)
	peer, _, _ := ParseAddr("10.0.0.1")
	junk := strings.Repeat("for=6.6.6.6, ", 200_000)
	for name, header := range map[string][]string{
		"one value":     {junk + "for=198.51.100.7, for=10.0.0.2"},
		"values":        {junk, "for=198.51.100.7", "for=10.0.0.2"},
		"an open quote": {`for="` + junk + "for=198.51.100.7, for=10.0.0.2"},
		"a chain of trusted proxies past the bound": {strings.Repeat("for=10.0.0.9, ", MaxForwardedElements+5) + "for=10.0.0.2"},
	} {
		want := "ip:198.51.100.7"
		if name == "a chain of trusted proxies past the bound" {
			want = "ip:10.0.0.9" // every element read is a trusted proxy's
		}
		assert.Equal(t, want, k.Key(peer, "", header), name)
		assert.LessOrEqual(t, testing.AllocsPerRun(5, func() { k.Key(peer, "", header) }), 1.0, name)
	}
}

// TestForwardedObfuscatedPortKeepsTheAddress: RFC 7239 lets a proxy hide
// the client's port behind an obfuscated identifier ("_" and letters,
// digits, '.', '_' or '-') while giving its address, as
// for="198.51.100.7:_conn1". That node names the client as well as
// for="198.51.100.7:4711" does; read as no address, it stopped the walk at
// the proxy, so every client behind a proxy that obfuscates ports shared
// the proxy's one key. A node that is wholly obfuscated, or whose port is
// not a valid obfuscated port, still stops the walk at the trusted hop that
// wrote it, and in an X-Forwarded-For list, where RFC 7239's syntax does
// not apply, such an entry is no address.
func TestForwardedObfuscatedPortKeepsTheAddress(t *testing.T) {
	fwd := NewIP()
	fwd.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	fwd.SetForwarded(true)
	peer := netip.MustParseAddr("10.0.0.1")
	for i, tc := range []struct {
		header, want string
	}{
		{`for="198.51.100.7:_conn1"`, "ip:198.51.100.7"},
		{`for="[2001:db8:1:2::7]:_a.b-c_9"`, "ip:2001:db8:1:2::/64"},
		{`for=6.6.6.6, for="198.51.100.7:_x", for="10.0.0.2:_y"`, "ip:198.51.100.7"}, // a trusted hop's too
		{`for="198.51.100.7:_"`, "ip:10.0.0.1"},                                      // "_" alone is no obfport
		{`for="198.51.100.7:_a b"`, "ip:10.0.0.1"},                                   // nor is one with a space
		{`for="198.51.100.7:_a:_b"`, "ip:10.0.0.1"},
		{`for="_hidden:_port"`, "ip:10.0.0.1"}, // an obfuscated node stays no address
		{`for="[2001:db8::7:_x]"`, "ip:10.0.0.1"},
	} {
		assert.Equal(t, tc.want, fwd.Key(peer, "", []string{tc.header}), "case %d: %s", i, tc.header)
	}
	xff := NewIP()
	xff.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	assert.Equal(t, "ip:10.0.0.1", xff.Key(peer, "", []string{"198.51.100.7:_conn1"}), "X-Forwarded-For has no obfuscated ports")
}

// TestTrustAllMappedIPv4: ::ffff:0:0/96, the IPv4-mapped prefix of the
// whole IPv4 space, trusts every IPv4 peer, which ParseAddr unmaps; kept as
// an IPv6 prefix it would match none, and no proxy's header would be read.
func TestTrustAllMappedIPv4(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("::ffff:0.0.0.0/96"))
	peer := netip.MustParseAddr("192.0.2.1")
	assert.True(t, k.Trusts(peer))
	assert.Equal(t, "ip:198.51.100.7", k.Key(peer, "", []string{"198.51.100.7"}))
}

// TestNonIPKeyIgnoresTheHeaderOfAnUntrustedPeer: NonIPKey itself, not only
// its callers, reads no forwarding header behind a peer that is not trusted.
func TestNonIPKeyIgnoresTheHeaderOfAnUntrustedPeer(t *testing.T) {
	k := NewIP()
	key, ok := k.NonIPKey("@", []string{"198.51.100.7"})
	assert.True(t, ok)
	assert.Equal(t, "peer:@", key)
}

// TestPeerKeyAsksForTheHeaderOnlyOfATrustedPeer: the header is looked up
// only when it counts, from a trusted proxy.
func TestPeerKeyAsksForTheHeaderOnlyOfATrustedPeer(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	calls := 0
	forwarded := func() []string { calls++; return []string{"198.51.100.7"} }
	key, _ := k.PeerKey("192.0.2.1:1", forwarded)
	assert.Equal(t, "ip:192.0.2.1", key)
	assert.Zero(t, calls, "an untrusted peer's header is not asked for")
	key, _ = k.PeerKey("10.0.0.1:1", forwarded)
	assert.Equal(t, "ip:198.51.100.7", key)
	assert.Equal(t, 1, calls)
}

// TestForwardedReadsExactlyTheBoundOfElements: a client behind exactly
// MaxForwardedElements trusted hops is out of reach, and behind one fewer
// it is found, whether or not the client left a quote open (which splits
// its value at every comma, and so counts those elements too).
func TestForwardedReadsExactlyTheBoundOfElements(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	k.SetForwarded(true)
	peer := netip.MustParseAddr("10.0.0.1")
	hops := func(n int) string { return strings.TrimSuffix(strings.Repeat("for=10.0.0.9, ", n), ", ") }
	for _, open := range []string{"", `for="x, `} {
		at := open + "for=198.51.100.7, " + hops(MaxForwardedElements)
		assert.Equal(t, "ip:10.0.0.9", k.Key(peer, "", []string{at}), "%q: the client is one past the bound", open)
		within := open + "for=198.51.100.7, " + hops(MaxForwardedElements-1)
		assert.Equal(t, "ip:198.51.100.7", k.Key(peer, "", []string{within}), "%q: the client is the last element read", open)
	}
}

// TestForwardedBackslashesAndSpaces: a backslash quotes a byte only inside
// a quoted-string, so a client's trailing backslash cannot swallow the comma
// its proxy appends after it; a quoted-string ending in a backslash is no
// address (and no out-of-range read); spaces around a parameter's "=" are
// read past.
func TestForwardedBackslashesAndSpaces(t *testing.T) {
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	k.SetForwarded(true)
	peer := netip.MustParseAddr("10.0.0.1")
	for i, tc := range []struct{ header, want string }{
		{`for=6.6.6.6\, for=198.51.100.7`, "ip:198.51.100.7"},
		{`for="198.51.100.7\"`, "ip:10.0.0.1"},
		{`for = 198.51.100.7`, "ip:198.51.100.7"},
	} {
		assert.Equal(t, tc.want, k.Key(peer, "", []string{tc.header}), "case %d: %s", i, tc.header)
	}
}
