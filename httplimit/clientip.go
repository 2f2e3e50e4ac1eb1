package httplimit

import (
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"

	"github.com/hotlimit/hotlimit/internal/transport"
)

// IPOption configures [ClientIP].
type IPOption func(*ipKey)

// TrustProxies names the proxies whose forwarding header is believed: when
// the request's immediate peer is inside one of prefixes, the client is read
// from the header (see [ClientIP]). Invalid prefixes are ignored; an
// IPv4-mapped IPv6 prefix also matches the IPv4 addresses it maps. Repeated
// options add up.
//
// Every host inside prefixes is believed, not only the proxies: any of them
// that reaches the server directly can write the header and so pick its own
// key, spending another client's quota or a fresh one per request. Name the
// proxies' own addresses or the narrowest prefix that holds them, not the
// whole network they sit in.
func TrustProxies(prefixes ...netip.Prefix) IPOption {
	return func(k *ipKey) { k.ip.Trust(prefixes...) }
}

// TrustNonIPPeers makes a peer whose address is not an IP address a trusted
// proxy: a reverse proxy that reaches the server over a Unix socket, whose
// r.RemoteAddr net/http reports as "@". Without it, such a peer's header is
// never read, and every client behind the proxy shares the one key
// "peer:@". With it, the client is read from the forwarding header as
// behind any trusted proxy, and "peer:" and RemoteAddr stays the key of a
// request whose header names no client. Use it only when every non-IP
// listener of the server is reached through proxies that write the header.
func TrustNonIPPeers() IPOption {
	return func(k *ipKey) { k.ip.TrustNonIP(true) }
}

// ProxyHeader sets the header that trusted proxies write the client into:
// "X-Forwarded-For" by default. "Forwarded" is parsed as RFC 7239 (its for=
// parameters, of its last 32 elements: a longer chain of trusted proxies ends
// at the first of them read); any other name as a comma-separated list of addresses, which
// suits X-Forwarded-For, X-Real-IP and the like. Name the one header your
// proxies append to: a header they pass through untouched is written by the
// client.
//
// The name is read as a configuration file may hold it: spaces and tabs
// around it are dropped, and its case does not matter (" x-real-ip " is
// X-Real-IP). An empty name, or one of spaces alone, keeps the default. A
// name that is not an HTTP field name once trimmed (a token of RFC 9110: it
// holds a space, a colon, a byte outside printable ASCII) names no header
// a request can carry, and is refused: ClientIP then reads no header at
// all, so every client behind a trusted proxy has the proxy's key. It does
// not fall back to X-Forwarded-For, which a proxy that writes another header
// may pass through from the client.
func ProxyHeader(name string) IPOption {
	return func(k *ipKey) {
		name := strings.Trim(name, " \t")
		if name == "" {
			return
		}
		if !transport.IsToken(name) {
			k.header = "" // no header: see ipKey.forwarded
			k.ip.SetForwarded(false)
			return
		}
		k.header = textproto.CanonicalMIMEHeaderKey(name)
		k.ip.SetForwarded(k.header == "Forwarded")
	}
}

// IPv6Prefix sets how many leading bits of an IPv6 address make the key: 64
// by default, since one subscriber usually holds a whole /64 and could
// otherwise rotate through its 2^64 addresses. bits is clamped to [1, 128].
//
// Many ISPs delegate more than a /64 to each home or business subscriber:
// a /56 is common, a /48 not rare. Such a subscriber holds 256 /64s (65,536
// in a /48), each a key of its own under the default, and so can spend
// 256 times its quota by moving from one to the next. IPv6Prefix(56) is
// the better choice when most clients are such subscribers (broadband
// traffic, or abuse seen rotating /64s within a /56): one key per /56. It
// is the worse one where a provider gives each customer a /64 of a /56 it
// shares out (some mobile carriers and hosting providers): those customers
// then share a quota.
func IPv6Prefix(bits int) IPOption {
	return func(k *ipKey) { k.ip.SetV6Bits(bits) }
}

// IPv4Prefix sets how many leading bits of an IPv4 address make the key: 32,
// the whole address, by default. bits is clamped to [1, 32]. It applies to
// the IPv4 address of an IPv4-mapped one and of one translated into
// 64:ff9b::/96 too (see [ClientIP]).
func IPv4Prefix(bits int) IPOption {
	return func(k *ipKey) { k.ip.SetV4Bits(bits) }
}

// ipKey is ClientIP's configuration; read-only once built.
type ipKey struct {
	ip     *transport.IP
	header string // canonical header name; "" to read none
}

// forwarded returns the values of the forwarding header of r, a request
// from a trusted peer.
func (k *ipKey) forwarded(r *http.Request) []string {
	if k.header == "" {
		return nil
	}
	return r.Header[k.header]
}

// ClientIP returns a KeyFunc whose key is the client's IP address, tagged
// with the kind "ip": "ip:192.0.2.1" for IPv4 and the address's /64 network,
// "ip:2001:db8:1:2::/64", for IPv6 (see [IPv4Prefix] and [IPv6Prefix]).
// IPv4-mapped IPv6 addresses count as IPv4 and zones are dropped. So does
// an IPv4 client that a NAT64 or SIIT translator names by its address
// within the well-known prefix 64:ff9b::/96 (RFC 6052), as an IPv6-only
// server behind one sees every IPv4 client: "ip:192.0.2.1" for
// 64:ff9b::c000:201, rather than the one /64 that holds every such address,
// grouped by [IPv4Prefix], not [IPv6Prefix]. It is the client at that IPv4
// address (a translator writes the address the packets came from), so it
// shares one key, and one quota, with that address reaching the server
// directly. (A translator with a prefix of its own, a network-specific one
// of RFC 6052, may put many IPv4 clients, or all of them, in one /64:
// IPv6Prefix(128) then keys each address apart, but also gives each native
// IPv6 client a key per address, 2^64 of them, so use it only where the
// translator's clients are the only IPv6 ones.) Whether an address is a
// trusted proxy is asked of it as it is written: a proxy that reaches the
// server through a translator is trusted by its 64:ff9b:: address, not by
// the IPv4 one it holds.
//
// The client is the request's immediate peer, from r.RemoteAddr, unless that
// peer is a trusted proxy ([TrustProxies]). Then the forwarding header
// ([ProxyHeader]) is read right to left, the order in which proxies append to
// it: each address that is itself a trusted proxy is skipped, and the first
// one that is not is the client. Everything left of it was written by the
// client or by hosts nobody vouches for, so a client cannot choose its key by
// sending the header itself: from an untrusted peer the header is ignored, and
// through trusted proxies only the entries they appended are believed. An
// entry that is not an address (garbage, "unknown", an obfuscated RFC 7239
// identifier) stops the walk at the trusted hop that wrote it, whose address
// becomes the key; if every entry is a trusted proxy, the leftmost is the key.
// A Forwarded node whose port alone is obfuscated, for="198.51.100.7:_p1",
// is its address.
//
// The key is found whenever RemoteAddr is not empty; a RemoteAddr that is not
// an address (a Unix socket, say) is used as it is, with the kind "peer":
// "peer:@", unless [TrustNonIPPeers] makes such a peer a trusted proxy. grpclimit finds the same keys from a gRPC peer and its
// x-forwarded-for metadata, with the same code.
func ClientIP(opts ...IPOption) KeyFunc {
	k := &ipKey{ip: transport.NewIP(), header: "X-Forwarded-For"}
	for _, opt := range opts {
		if opt != nil {
			opt(k)
		}
	}
	return k.key
}

func (k *ipKey) key(r *http.Request) (string, bool) {
	addr, text, ok := transport.ParseAddr(r.RemoteAddr)
	if !ok {
		var forwarded []string
		if k.ip.TrustsNonIP() {
			forwarded = k.forwarded(r)
		}
		return k.ip.NonIPKey(r.RemoteAddr, forwarded)
	}
	var forwarded []string
	if k.ip.Trusts(addr) {
		forwarded = k.forwarded(r)
	}
	return k.ip.Key(addr, text, forwarded), true
}
