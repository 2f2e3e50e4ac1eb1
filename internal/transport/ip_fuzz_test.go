package transport

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseAddr checks ParseAddr against net/netip: every address or
// address and port netip accepts is accepted, with the same (unmapped,
// zoneless) address; what ParseAddr returns is always such an address, with
// text only for IPv4 and equal to its canonical form; and Key never panics on
// a header built from the input.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "192.0.2.1:80", "[2001:db8::1]:80", "2001:db8::1%eth0",
		"::ffff:192.0.2.1", "[::ffff:10.0.0.1]", " 1.2.3.4 ", "1.2.3.4:99999", "01.2.3.4", "for=\"[::1]:4\";by=x", "a,b, 10.0.0.1"} {
		f.Add(s)
	}
	k := NewIP()
	k.Trust(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::/0"))
	fk := NewIP()
	fk.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	fk.SetForwarded(true)
	f.Fuzz(func(t *testing.T, s string) {
		a, text, ok := ParseAddr(s)
		if ok {
			if !a.IsValid() || a.Is4In6() || a.Zone() != "" {
				t.Fatalf("ParseAddr(%q) = %v, want a valid unmapped address without zone", s, a)
			}
			if text != "" && (!a.Is4() || text != a.String()) {
				t.Fatalf("ParseAddr(%q) text %q for %v", s, text, a)
			}
		}
		trimmed := strings.TrimSpace(s)
		if want, err := netip.ParseAddr(trimmed); err == nil {
			if !ok || a != want.Unmap().WithZone("") {
				t.Fatalf("ParseAddr(%q) = %v, %v; netip parses %v", s, a, ok, want)
			}
		}
		if want, err := netip.ParseAddrPort(trimmed); err == nil {
			if !ok || a != want.Addr().Unmap().WithZone("") {
				t.Fatalf("ParseAddr(%q) = %v, %v; netip parses %v", s, a, ok, want)
			}
		}
		peer := netip.MustParseAddr("10.0.0.1")
		for _, ip := range []*IP{k, fk} {
			if key := ip.Key(peer, "10.0.0.1", []string{s, s}); !strings.HasPrefix(key, "ip:") {
				t.Fatalf("Key of %q = %q", s, key)
			}
		}
	})
}
