package transport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHostCanonical: the spellings of one host make one key (case, one
// trailing dot, a default port of the web, 443 or 80, an empty port, a
// port's leading zeros, an IPv6 literal's text), any other port stays, and
// a value that is no host [":" port] is kept as sent, in lower case: it
// neither panics, nor becomes another host's key, nor an empty one.
func TestHostCanonical(t *testing.T) {
	for _, c := range []struct {
		in, key string
	}{
		{"example.com", "example.com"},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"example.com..", "example.com.."}, // no name + "."
		{"example.com..:443", "example.com.."},
		{"..", ".."},
		{"example.com:443", "example.com"},
		{"example.com:80", "example.com"},
		{"example.com.:443", "example.com"},
		{"example.com:8443", "example.com:8443"},
		{"example.com:0443", "example.com"},
		{"example.com:080", "example.com"},
		{"example.com:", "example.com"},
		{"example.com:0", "example.com:0"},
		{"example.com:000", "example.com:0"},
		{"example.com:65535", "example.com:65535"},
		{"example.com:00065535", "example.com:65535"},
		{"localhost", "localhost"},
		{"192.0.2.1:80", "192.0.2.1"},
		{"192.0.2.1.", "192.0.2.1"},
		{"[::1]", "[::1]"},
		{"[::1]:443", "[::1]"},
		{"[::1]:80", "[::1]"},
		{"[0:0::1]:8443", "[::1]:8443"},
		{"[2001:DB8::1]", "[2001:db8::1]"},
		{"[::ffff:192.0.2.1]:443", "[::ffff:192.0.2.1]"},
		{"[fe80::1%25eth0]:443", "[fe80::1%25eth0]"}, // zone kept as sent
		{"[fe80:0::1%eth0]:443", "[fe80:0::1%eth0]"}, // with its address's text
		{"[v1.x]:443", "[v1.x]"},                     // IPvFuture: port rule only
		{".", "."},                                   // a dot alone is no name without it
		{".:443", "."},

		// No host [":" port]: kept as sent, in lower case.
		{"example.com:65536", "example.com:65536"},
		{"example.com:99999", "example.com:99999"},
		{"example.com:100443", "example.com:100443"}, // not 443 modulo anything
		{"example.com:4294967739", "example.com:4294967739"},
		{"example.com:-443", "example.com:-443"},
		{"example.com:+443", "example.com:+443"},
		{"example.com:443.", "example.com:443."},
		{"example.com:443:443", "example.com:443:443"},
		{"example.com: 443", "example.com: 443"},
		{"example.com :443", "example.com :443"},
		{"example.com\t:80", "example.com\t:80"},
		{"example.com .:443", "example.com .:443"},
		{"exa\x00mple.com:443", "exa\x00mple.com:443"},
		{"exa\x7fmple.com:443", "exa\x7fmple.com:443"},
		{"example.com:0443a", "example.com:0443a"},
		{"example.com.:8443a", "example.com.:8443a"},
		{"Example.com:HTTPS", "example.com:https"},
		{":443", ":443"},
		{":80", ":80"},
		{":", ":"},
		{"::1", "::1"},
		{"::1:443", "::1:443"},
		{"2001:db8::1:80", "2001:db8::1:80"},
		{"[::1", "[::1"},
		{"[::1:443", "[::1:443"},
		{"::1]:443", "::1]:443"},
		{"[::1]x", "[::1]x"},
		{"[::1].", "[::1]."},
		{"[::1]443", "[::1]443"},
		{"[[::1]]:443", "[[::1]]:443"},
		{"[[::1]:443", "[[::1]:443"},
		{"a[b]:443", "a[b]:443"},
		{"[]:443", "[]"}, // a bracketed nothing: the port rule alone
		{"", ""},
	} {
		assert.Equal(t, c.key, Host(c.in), "%q", c.in)
	}
}

// TestHostKeepsHostsApart: values that name different hosts, or one host
// on ports other than the web's defaults, keep different keys, among
// themselves and against the values kept as sent.
func TestHostKeepsHostsApart(t *testing.T) {
	distinct := []string{"example.com", "example.com:8443", "example.com:8080", "example.com:0",
		"example.com:65535", "example.com:65536", "example.com:99999", "example.com:100443", "example.com:-443",
		"example.com.", "example.com..", "www.example.com", "example.co", "[::1]", "[::1]:8443", "[::2]", "::1", "[::1",
		":443", ":", "192.0.2.1", "[::ffff:192.0.2.1]", "[fe80::1%25eth0]", "[fe80::1%25eth1]", ".", "..",
		"example.com ", "example.com\t"}
	seen := map[string]string{}
	for _, v := range distinct {
		if v == "example.com." {
			continue // one dot is dropped: it is example.com
		}
		k := Host(v)
		assert.NotEmpty(t, k, "%q", v)
		if prev, ok := seen[k]; ok {
			t.Errorf("%q and %q share the key %q", prev, v, k)
		}
		seen[k] = v
	}
	assert.NotEqual(t, Host("example.com.."), Host("example.com"))
	assert.NotEqual(t, Host(".."), Host("."))
}

// TestHostKeyIsItsOwnRule: a key is its own canonical form, so the host
// of a key read off a request (in a log, a metric) and written in a rule
// names that key. "example.com.." was "example.com.", which a rule makes
// example.com, and ".." was "." (the key of "." too); "example.com :443"
// was "example.com ", which a rule trims to example.com.
func TestHostKeyIsItsOwnRule(t *testing.T) {
	host := NewHeaderKeys("Host")
	for _, v := range []string{"example.com..", "example.com..:443", "..", "..:80", "example.com :443",
		"example.com\t:443", "example.com :80", "example.com .:443", "Example.com.:0443", "[0:0::1]:443", "[]:443"} {
		k := host.Value(v)
		assert.Equal(t, k, Host(k), "%q", v)
		assert.Equal(t, k, host.Value(k), "%q", v)
	}
}

// TestHostAllocates: a host already canonical, or one that loses a port or
// a dot alone, costs no allocation; one rewrite costs one, and a change of
// case with another rewrite two.
func TestHostAllocates(t *testing.T) {
	for _, c := range []struct {
		v      string
		allocs float64
	}{
		{"Api.example.com", 1},
		{"Api.example.com:443", 1},
		{"api.example.com:08443", 1},
		{"api.example.com.:8443", 1},
		{"[0:0::1]:443", 1},
		{"[::1]:0443", 0},
		{"Api.example.com.:08443", 2},
		{"[0:0::1]:8443", 2},
	} {
		assert.Equal(t, c.allocs, testing.AllocsPerRun(100, func() { _ = Host(c.v) }), "%q", c.v)
	}
	host := NewHeaderKeys("Host")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_ = Host("api.example.com")
		_ = Host("api.example.com:443")
		_ = Host("api.example.com.:80")
		_ = Host("api.example.com:8443")
		_ = Host("[::1]:443")
		_ = host.Value(" api.example.com:443 ")
	}))
	assert.Equal(t, strings.Repeat("a", 300), Host(strings.Repeat("A", 300)+":443"))
}

// FuzzHost: Host never panics, makes no empty key of a value that is not
// empty, what it changes (beyond case) is a host [":" port], so a value it
// keeps because it is none never equals another value's key, and a key is
// its own canonical form, after the trimming of a field value too
// (Host(Host(v)) is Host(v)).
func FuzzHost(f *testing.F) {
	for _, s := range []string{"example.com:443", "[::1]:80", "::1", "[::1", ":443", "a.:0443", "[fe80::1%eth0]:1", ".", "..", "a.. :443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		host := NewHeaderKeys("Host")
		k := Host(v)
		if v != "" && k == "" {
			t.Fatalf("Host(%q) is empty", v)
		}
		if again := Host(k); again != k {
			t.Fatalf("Host(%q) = %q, whose own form is %q", v, k, again)
		}
		if kv := host.Value(v); host.Value(kv) != kv {
			t.Fatalf("Value(%q) = %q, whose own form is %q", v, kv, host.Value(kv))
		}
		if k == lowerASCII(v) {
			return
		}
		if _, _, ok := splitHostPort(k); !ok {
			t.Fatalf("Host(%q) = %q, no host [\":\" port]", v, k)
		}
	})
}
