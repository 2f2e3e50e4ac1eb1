package transport

import (
	"hash/maphash"
	"net/netip"
	"strings"
	"sync/atomic"
)

// IP makes the client-IP key of a request from its peer's address and the
// values of its forwarding header. Configure it with the setters, then share
// it read-only: Key is safe for concurrent use once no setter runs.
//
// The client is the immediate peer unless that peer is a trusted proxy. Then
// the forwarding header is read right to left, the order in which proxies
// append to it: each address that is itself a trusted proxy is skipped, and
// the first one that is not is the client. Everything left of it was written
// by the client or by hosts nobody vouches for, so a client cannot choose its
// key by sending the header itself: from an untrusted peer the header is
// ignored, and through trusted proxies only the entries they appended are
// believed. An entry that is not an address (garbage, "unknown", an
// obfuscated RFC 7239 identifier) stops the walk at the trusted hop that
// wrote it, whose address becomes the key; if every entry is a trusted proxy,
// the leftmost is the key. A Forwarded node whose port alone is obfuscated
// ("198.51.100.7:_p1") is its address. The client's key is its IPv4 address
// when it is IPv4-mapped or translated into 64:ff9b::/96 (see format).
type IP struct {
	trusted   []netip.Prefix // masked; IPv4 prefixes for IPv4 addresses
	nonIP     bool           // a peer that is not an IP address is a trusted proxy
	forwarded bool           // header values are RFC 7239 Forwarded
	v4bits    int
	v6bits    int
	seed      maphash.Seed
	// recent holds keys made lately, so that a client seen again (a
	// keep-alive connection, a proxy, a sidecar) costs no allocation. Slot i
	// holds a key whose bytes hash to i; any goroutine may overwrite a slot
	// with a plain Store, and a reader uses a slot's key only when it equals
	// the key being made, so a stale or concurrently replaced slot can cost
	// an allocation, never a wrong key. Its size bounds its memory.
	recent [recentKeys]atomic.Pointer[string]
}

// recentKeys is the number of slots of IP.recent, a power of two.
const recentKeys = 256

// NewIP returns an IP that trusts no proxy, reads X-Forwarded-For-style
// lists, and keys IPv4 by the whole address and IPv6 by its /64.
func NewIP() *IP { return &IP{v4bits: 32, v6bits: 64, seed: maphash.MakeSeed()} }

// Trust adds prefixes to the trusted proxies. Invalid prefixes are ignored;
// an IPv4-mapped IPv6 prefix also matches the IPv4 addresses it maps.
func (k *IP) Trust(prefixes ...netip.Prefix) {
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

// TrustNonIP says whether a peer that is not an IP address (a Unix socket,
// whose peer net/http reports as "@"; a pipe) is a trusted proxy, whose
// forwarding header NonIPKey reads. Only the operator can connect such a
// peer, and a proxy on a Unix socket is the one way a client reaches it:
// without trusting it, every client would share the peer's one key.
func (k *IP) TrustNonIP(on bool) { k.nonIP = on }

// TrustsNonIP reports whether a peer that is not an IP address is trusted.
func (k *IP) TrustsNonIP() bool { return k.nonIP }

// NonIPKey returns the key of the client behind a peer that is not an IP
// address, whose text is peer: when such peers are trusted (TrustNonIP),
// the client the forwarding header names, read as Key reads it; else, or
// when the header names none (it is absent, or its last entry is not an
// address), the peer itself tagged as KindPeer ("peer:@"). ok is false for
// an empty peer without a client in the header.
func (k *IP) NonIPKey(peer string, forwarded []string) (key string, ok bool) {
	if k.nonIP && len(forwarded) > 0 {
		var a netip.Addr
		var text string
		if k.forwarded {
			var buf [MaxForwardedElements]string
			a, text = k.walk(forValues(forwarded, buf[:0]), netip.Addr{}, "")
		} else {
			a, text = k.walk(forwarded, netip.Addr{}, "")
		}
		if a.IsValid() {
			return k.format(a, text), true
		}
	}
	if peer == "" {
		return "", false
	}
	return Tag(KindPeer, peer), true
}

// SetForwarded says whether the header values are RFC 7239 Forwarded (their
// for= parameters) rather than comma-separated lists of addresses.
func (k *IP) SetForwarded(on bool) { k.forwarded = on }

// SetV4Bits sets how many leading bits of an IPv4 address make the key,
// clamped to [1, 32].
func (k *IP) SetV4Bits(bits int) { k.v4bits = min(max(bits, 1), 32) }

// SetV6Bits sets how many leading bits of an IPv6 address make the key,
// clamped to [1, 128].
func (k *IP) SetV6Bits(bits int) { k.v6bits = min(max(bits, 1), 128) }

// Trusts reports whether a is a trusted proxy, that is whether Key reads the
// forwarding header of a request from a. Callers use it to look the header
// up only when it counts.
func (k *IP) Trusts(a netip.Addr) bool {
	for _, p := range k.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Key returns the tagged key of the client behind peer, "ip:192.0.2.1" or
// "ip:2001:db8:1:2::/64". peer is the immediate peer's address (unmapped,
// without zone, as ParseAddr returns it) and peerText, when not empty, its
// canonical IPv4 text; forwarded are the values of the forwarding header,
// read only when peer is trusted. It allocates the key and nothing else for
// an X-Forwarded-For list.
func (k *IP) Key(peer netip.Addr, peerText string, forwarded []string) string {
	addr, text := peer, peerText
	if len(k.trusted) > 0 && len(forwarded) > 0 && k.Trusts(peer) {
		if k.forwarded {
			var buf [MaxForwardedElements]string
			addr, text = k.walk(forValues(forwarded, buf[:0]), addr, text)
		} else {
			addr, text = k.walk(forwarded, addr, text)
		}
	}
	return k.format(addr, text)
}

// PeerKey returns the key of a peer address string such as a
// net/http Request.RemoteAddr, "192.0.2.1:1234": Key of the address when it
// is one, else NonIPKey of the string (a Unix socket, say). forwarded is
// called, only when the peer is a trusted proxy, to get the forwarding
// header's values.
func (k *IP) PeerKey(peer string, forwarded func() []string) (key string, ok bool) {
	addr, text, ok := ParseAddr(peer)
	if !ok {
		var values []string
		if k.nonIP {
			values = forwarded()
		}
		return k.NonIPKey(peer, values)
	}
	var values []string
	if len(k.trusted) > 0 && k.Trusts(addr) {
		values = forwarded()
	}
	return k.Key(addr, text, values), true
}

// walk reads the comma-separated entries of values right to left, starting
// from the trusted peer, and returns the first address that is not a trusted
// proxy, or the last trusted one when an entry is not an address or the list
// ends. peer is the zero Addr for a trusted peer that is not an IP address,
// which is returned when the last entry is not an address.
func (k *IP) walk(values []string, peer netip.Addr, peerText string) (netip.Addr, string) {
	cur, curText := peer, peerText
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for {
			j := strings.LastIndexByte(v, ',')
			a, text, ok := ParseAddr(v[j+1:])
			if !ok {
				return cur, curText
			}
			if !k.Trusts(a) {
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

// nat64 is the well-known prefix of RFC 6052, 64:ff9b::/96, in which a
// NAT64 or SIIT translator gives each IPv4 host it translates the IPv6
// address that holds the host's IPv4 address in its last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// format returns a's tagged key: a recent one when it is the same, else one
// built in one allocation. text, when not empty, is a's canonical IPv4 text.
//
// An address of nat64 is keyed as the IPv4 address it holds, as an
// IPv4-mapped one is: every address of nat64 lies in one /64, so that an
// IPv6-only server behind a translator would otherwise give every IPv4
// client of the internet one key, and one client could spend the quota of
// all. Only the key changes: Trusts asks of the address as it is written,
// so a proxy reached through a translator is trusted by its 64:ff9b::
// address.
func (k *IP) format(a netip.Addr, text string) string {
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		a, text = netip.AddrFrom4([4]byte(b[12:])), ""
	}
	var buf [64]byte // "ip:" and the longest prefix, "ffff:...:ffff/128", fit
	b := append(buf[:0], KindIP...)
	b = append(b, ':')
	switch {
	case a.Is4() && k.v4bits >= 32 && text != "":
		b = append(b, text...)
	case a.Is4() && k.v4bits >= 32, !a.Is4() && k.v6bits >= 128:
		b = a.AppendTo(b)
	case a.Is4():
		p, _ := a.Prefix(k.v4bits) // cannot fail: a is valid and bits in [1, 32]
		b = p.AppendTo(b)
	default:
		p, _ := a.Prefix(k.v6bits) // cannot fail: a is valid and bits in [1, 128]
		b = p.AppendTo(b)
	}
	slot := &k.recent[maphash.Bytes(k.seed, b)&(recentKeys-1)]
	if key := slot.Load(); key != nil && *key == string(b) {
		return *key
	}
	key := string(b)
	slot.Store(&key)
	return key
}

// ParseAddr parses an address with an optional port ("192.0.2.1",
// "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]:80", "[2001:db8::1]") and
// surrounding spaces. It unmaps IPv4-mapped addresses and drops zones. text
// is s itself, trimmed and without the port, when that is the canonical text
// of an IPv4 result (netip accepts only canonical dotted quads).
//
// The form is chosen from the brackets and colons before parsing, so that a
// valid address is parsed once and never through a failing (allocating)
// attempt.
func ParseAddr(s string) (a netip.Addr, text string, ok bool) {
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
// returns it and its length. It is the fast path of ParseAddr for the common
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
//
// A value whose quoted-strings do not all close is split at every comma,
// quoted or not. Such a value was begun by the client: a proxy appends
// ", for=" and a node, which holds no comma and either no quote or two, so
// when a client leaves a quote open, every comma a proxy wrote after it reads
// as quoted and the value still ends inside the quote. Splitting at every
// comma gives each proxy's element back, so the walk finds the client there
// instead of stopping at the proxy.
//
// Only the last MaxForwardedElements elements are appended: the walk reads
// from the last element back and stops at the first address it does not
// trust, so only a chain of more trusted proxies than that could reach
// further, and a client's header of many elements costs a scan, never a
// list as long as itself.
func forValues(values []string, dst []string) []string {
	skip := -MaxForwardedElements
	for _, v := range values {
		skip += forElements(v)
	}
	for _, v := range values {
		if n := forElements(v); skip >= n {
			skip -= n
			continue
		}
		if openQuote(v) {
			for elem := range strings.SplitSeq(v, ",") {
				if skip > 0 {
					skip--
					continue
				}
				dst = append(dst, forParam(elem))
			}
			continue
		}
		for v != "" {
			var elem string
			elem, v = cutOutsideQuotes(v, ',')
			if skip > 0 {
				skip--
				continue
			}
			dst = append(dst, forParam(elem))
		}
	}
	return dst
}

// MaxForwardedElements is how many elements of a Forwarded field, the last
// ones, a walk reads (see forValues).
const MaxForwardedElements = 32

// forElements returns how many elements forValues splits the Forwarded
// field value v into.
func forElements(v string) int {
	if openQuote(v) {
		return strings.Count(v, ",") + 1
	}
	n := 0
	for ; v != ""; n++ {
		_, v = cutOutsideQuotes(v, ',')
	}
	return n
}

// openQuote reports whether s ends inside a quoted-string.
func openQuote(s string) bool {
	_, open := scanQuotes(s, -1)
	return open
}

// forParam returns the unquoted value of the for parameter of one Forwarded
// element, or "".
func forParam(elem string) string {
	for elem != "" {
		var pair string
		pair, elem = cutOutsideQuotes(elem, ';')
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(name), "for") {
			return dropObfPort(strings.TrimSpace(unquote(strings.TrimSpace(value))))
		}
	}
	return ""
}

// dropObfPort returns the node of a for= value without its obfuscated port
// (RFC 7239 section 6.3: "_" and one or more letters, digits, '.', '_' or
// '-'), which hides the client's port, not its address:
// "198.51.100.7:_p1" is "198.51.100.7" and "[2001:db8::7]:_p1" is
// "[2001:db8::7]", the address a walk reads. Any other value, an obfuscated
// node among them, is returned as it is.
func dropObfPort(v string) string {
	i := strings.LastIndexByte(v, ':')
	if i < 0 || !obfPort(v[i+1:]) {
		return v
	}
	if host := v[:i]; strings.HasSuffix(host, "]") || !strings.Contains(host, ":") {
		return host
	}
	return v // an unbracketed IPv6 address: its last group is no port
}

// obfPort reports whether s is an RFC 7239 obfport.
func obfPort(s string) bool {
	if len(s) < 2 || s[0] != '_' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// cutOutsideQuotes splits s at the first sep outside a quoted-string.
func cutOutsideQuotes(s string, sep byte) (before, after string) {
	if i, _ := scanQuotes(s, int(sep)); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// scanQuotes returns the index in s of the first byte sep outside a
// quoted-string (a backslash quotes the byte after it inside one), or -1
// when there is none (sep -1 never matches), and then whether s ends inside
// a quoted-string.
func scanQuotes(s string, sep int) (at int, open bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && int(c) == sep:
			return i, false
		}
	}
	return -1, quoted
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
