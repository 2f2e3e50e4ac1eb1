package httplimit

import (
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
)

// IPOption configures [ClientIP].
type IPOption func(*ipKey)

// TrustProxies names the proxies whose forwarding header is believed: when
// the request's immediate peer is inside one of prefixes, the client is read
// from the header (see [ClientIP]). Invalid prefixes are ignored; an
// IPv4-mapped IPv6 prefix also matches the IPv4 addresses it maps. Repeated
// options add up.
func TrustProxies(prefixes ...netip.Prefix) IPOption {
	return func(k *ipKey) {
		for _, p := range prefixes {
			if !p.IsValid() {
				continue
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			k.trusted = append(k.trusted, p.Masked())
		}
	}
}

// ProxyHeader sets the header that trusted proxies write the client into:
// "X-Forwarded-For" by default. "Forwarded" is parsed as RFC 7239 (its for=
// parameters); any other name as a comma-separated list of addresses, which
// suits X-Forwarded-For, X-Real-IP and the like. Name the one header your
// proxies append to: a header they pass through untouched is written by the
// client. An empty name keeps the default.
func ProxyHeader(name string) IPOption {
	return func(k *ipKey) {
		if name != "" {
			k.header = textproto.CanonicalMIMEHeaderKey(name)
			k.forwarded = k.header == "Forwarded"
		}
	}
}

// IPv6Prefix sets how many leading bits of an IPv6 address make the key: 64
// by default, since one subscriber usually holds a whole /64 and could
// otherwise rotate through its 2^64 addresses. bits is clamped to [1, 128].
func IPv6Prefix(bits int) IPOption {
	return func(k *ipKey) { k.v6bits = min(max(bits, 1), 128) }
}

// IPv4Prefix sets how many leading bits of an IPv4 address make the key: 32,
// the whole address, by default. bits is clamped to [1, 32].
func IPv4Prefix(bits int) IPOption {
	return func(k *ipKey) { k.v4bits = min(max(bits, 1), 32) }
}

// ipKey is ClientIP's configuration; read-only once built.
type ipKey struct {
	trusted   []netip.Prefix // masked; IPv4 prefixes for IPv4 addresses
	header    string         // canonical header name
	forwarded bool           // header is RFC 7239 Forwarded
	v4bits    int
	v6bits    int
}

// ClientIP returns a KeyFunc whose key is the client's IP address: "192.0.2.1"
// for IPv4 and the address's /64 network, "2001:db8:1:2::/64", for IPv6 (see
// [IPv4Prefix] and [IPv6Prefix]). IPv4-mapped IPv6 addresses count as IPv4
// and zones are dropped.
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
//
// The key is found whenever RemoteAddr is not empty; a RemoteAddr that is not
// an address (a Unix socket, say) is used as it is.
func ClientIP(opts ...IPOption) KeyFunc {
	k := &ipKey{header: "X-Forwarded-For", v4bits: 32, v6bits: 64}
	for _, opt := range opts {
		if opt != nil {
			opt(k)
		}
	}
	return k.key
}

func (k *ipKey) key(r *http.Request) (string, bool) {
	addr, text, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr, r.RemoteAddr != ""
	}
	if len(k.trusted) > 0 && k.trust(addr) {
		if k.forwarded {
			var buf [8]string
			addr, text = k.walk(forValues(r.Header[k.header], buf[:0]), addr, text)
		} else {
			addr, text = k.walk(r.Header[k.header], addr, text)
		}
	}
	return k.format(addr, text), true
}

// trust reports whether a is a trusted proxy.
func (k *ipKey) trust(a netip.Addr) bool {
	for _, p := range k.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// walk reads the comma-separated entries of values right to left, starting
// from the trusted peer, and returns the first address that is not a trusted
// proxy, or the last trusted one when an entry is not an address or the list
// ends.
func (k *ipKey) walk(values []string, peer netip.Addr, peerText string) (netip.Addr, string) {
	cur, curText := peer, peerText
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for {
			j := strings.LastIndexByte(v, ',')
			a, text, ok := parseAddr(v[j+1:])
			if !ok {
				return cur, curText
			}
			if !k.trust(a) {
				return a, text
			}
			cur, curText = a, text
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	return cur, curText
}

// format returns a's key; text, when not empty, is a's canonical IPv4 text.
func (k *ipKey) format(a netip.Addr, text string) string {
	if a.Is4() {
		if k.v4bits >= 32 {
			if text != "" {
				return text
			}
			return a.String()
		}
		p, _ := a.Prefix(k.v4bits) // cannot fail: a is valid and bits in [1, 32]
		return p.String()
	}
	if k.v6bits >= 128 {
		return a.String()
	}
	p, _ := a.Prefix(k.v6bits) // cannot fail: a is valid and bits in [1, 128]
	return p.String()
}

// parseAddr parses an address with an optional port ("192.0.2.1",
// "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]:80", "[2001:db8::1]") and
// surrounding spaces. It unmaps IPv4-mapped addresses and drops zones. text
// is s itself, trimmed and without the port, when that is the canonical text
// of an IPv4 result (netip accepts only canonical dotted quads), so the key
// can be a substring of the request rather than a new string.
//
// The form is chosen from the brackets and colons before parsing, so that a
// valid address is parsed once and never through a failing (allocating)
// attempt.
func parseAddr(s string) (a netip.Addr, text string, ok bool) {
	s = strings.TrimSpace(s)
	if ip, n, ok := parseDottedQuad(s); ok && validPort(s[n:]) {
		return netip.AddrFrom4(ip), s[:n], true
	}
	host, hasPort := s, false
	switch {
	case strings.HasPrefix(s, "["):
		if strings.HasSuffix(s, "]") {
			host = s[1 : len(s)-1]
		} else {
			hasPort = true
		}
	case strings.Count(s, ":") == 1:
		hasPort = true
		host = s[:strings.IndexByte(s, ':')]
	}
	if hasPort {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, "", false
		}
		a = ap.Addr()
	} else {
		var err error
		if a, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, "", false
		}
	}
	if a.Is4() {
		return a, host, true
	}
	return a.Unmap().WithZone(""), "", true
}

// parseDottedQuad parses the canonical dotted quad at the start of s (four
// decimal bytes without leading zeros, the only form netip accepts) and
// returns it and its length. It is the fast path of parseAddr for the common
// "192.0.2.1:51234".
func parseDottedQuad(s string) (ip [4]byte, n int, ok bool) {
	i := 0
	for part := range 4 {
		if part > 0 {
			if i >= len(s) || s[i] != '.' {
				return ip, 0, false
			}
			i++
		}
		start, v := i, 0
		for i < len(s) && i-start < 3 && '0' <= s[i] && s[i] <= '9' {
			v = v*10 + int(s[i]-'0')
			i++
		}
		if i == start || v > 255 || (s[start] == '0' && i-start > 1) {
			return ip, 0, false
		}
		ip[part] = byte(v)
	}
	return ip, i, true
}

// validPort reports whether s is empty or a colon and a port in [0, 65535].
func validPort(s string) bool {
	if s == "" {
		return true
	}
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	v := 0
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v <= 65535
}

// forValues appends to dst the for= value of every element of the RFC 7239
// Forwarded field values, in order; an element without one contributes "",
// which is not an address and so stops a walk.
func forValues(values []string, dst []string) []string {
	for _, v := range values {
		for v != "" {
			var elem string
			elem, v = cutOutsideQuotes(v, ',')
			dst = append(dst, forParam(elem))
		}
	}
	return dst
}

// forParam returns the unquoted value of the for parameter of one Forwarded
// element, or "".
func forParam(elem string) string {
	for elem != "" {
		var pair string
		pair, elem = cutOutsideQuotes(elem, ';')
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(name), "for") {
			return unquote(strings.TrimSpace(value))
		}
	}
	return ""
}

// cutOutsideQuotes splits s at the first sep outside a quoted-string.
func cutOutsideQuotes(s string, sep byte) (before, after string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// unquote returns the content of an RFC 9110 quoted-string, or s itself when
// it is a token.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	s = s[1 : len(s)-1]
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
