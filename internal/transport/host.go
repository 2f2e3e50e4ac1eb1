package transport

import (
	"net/netip"
	"strings"
)

// Host returns the canonical form of a host as a Host header or an
// :authority holds it, host [":" port], so that the spellings of one host
// a client may send, and a rule may write, make one key (RFC 3986 sections
// 3.2.2, 3.2.3 and 6.2.3):
//
//   - ASCII letters in lower case ("API.Example.com" is api.example.com);
//   - one trailing dot of a name dropped ("example.com." is example.com,
//     the same name written fully qualified), but for a name of a dot alone
//     and a name that ends in two dots ("example.com.." and ".." are kept:
//     dropping one would make them "example.com." and ".", the spellings
//     of other names, and a key that is not its own canonical form);
//   - an IPv6 literal kept in its brackets, in its RFC 5952 text
//     ("[0:0::1]" is [::1]), unless it has a zone, which is kept as sent;
//   - a port's leading zeros dropped (":0443" is :443), and an empty port
//     with its colon ("example.com:" is example.com);
//   - the port dropped when it is a default port of the web, 443 (https)
//     or 80 (http), whatever the scheme the request came by
//     ("example.com:443" and "example.com:80" are example.com). The host
//     without a port is one key over both schemes already, and the scheme
//     a request came by is not the one its client wrote: a proxy that ends
//     TLS forwards "example.com:443" over plain HTTP. Any other port stays
//     ("example.com:8443" is a key of its own).
//
// A value that is no host [":" port] (an empty host, as in ":443"; a host
// holding a space, a tab or another control byte, "example.com :443",
// whose port dropped would leave a key ending in a space that no trimmed
// rule names; an unbracketed IPv6 address, "::1", whose port cannot be
// told from its last group; a bracket left open, "[::1"; a port that is
// not a number, or past 65535) is kept as sent, in lower case. Every value
// Host changes otherwise is a host [":" port] of that form, so such a
// value never becomes the key of another host, nor an empty one, and a
// key is its own canonical form: Host(Host(v)) is Host(v). Host allocates
// once when it changes a letter's case, a port's digits or an IPv6
// literal, or drops a trailing dot before a port it keeps
// ("example.com.:8443"), and twice when it changes the case and one of the
// others ("Example.com:08443"); dropping a dot or a default port alone
// costs nothing.
func Host(v string) string {
	v = lowerASCII(v)
	host, digits, ok := splitHostPort(v)
	if !ok {
		return v
	}
	name := host
	if strings.HasPrefix(name, "[") {
		literal := name[1 : len(name)-1]
		if a, err := netip.ParseAddr(literal); err == nil && a.Is6() && a.Zone() == "" {
			var buf [len("[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]")]byte
			if t := append(a.AppendTo(append(buf[:0], '[')), ']'); string(t) != name {
				name = string(t)
			}
		}
	} else if len(name) > 1 && name[len(name)-1] == '.' && name[len(name)-2] != '.' {
		name = name[:len(name)-1]
	}
	port := strings.TrimLeft(digits, "0")
	if port == "" && digits != "" {
		port = "0" // port 0, written with zeros
	}
	switch {
	case port == "" || port == "443" || port == "80":
		return name
	case name == host && port == digits:
		return v // unchanged: no allocation
	}
	return name + ":" + port
}

// splitHostPort splits v, host [":" port], into the host and the port's
// digits as sent ("" when v has no port or an empty one). ok is false when
// v is no such value: an empty host, a host holding a space or another
// control byte, a bracket without its pair or a
// bracket inside a name, an unbracketed host with a colon (an IPv6
// address), text after the closing bracket other than a port, or a port
// that is not digits or names no port (past 65535).
func splitHostPort(v string) (host, digits string, ok bool) {
	rest := ""
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest = v[:end+1], v[end+1:]
		if strings.ContainsAny(host[1:len(host)-1], "[") {
			return "", "", false
		}
	} else {
		host = v
		if i := strings.IndexByte(v, ':'); i >= 0 {
			host, rest = v[:i], v[i:]
		}
		if strings.ContainsAny(host, "[]") {
			return "", "", false
		}
	}
	if host == "" {
		return "", "", false
	}
	for i := 0; i < len(host); i++ {
		if host[i] <= ' ' || host[i] == 0x7f {
			return "", "", false
		}
	}
	if rest == "" {
		return host, "", true
	}
	if rest[0] != ':' {
		return "", "", false
	}
	digits = rest[1:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", "", false // a second colon too
		}
	}
	if n := strings.TrimLeft(digits, "0"); len(n) > 5 || len(n) == 5 && n > "65535" {
		return "", "", false
	}
	return host, digits, true
}
