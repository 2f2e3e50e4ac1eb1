package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/hotlimit/hotlimit/httplimit"
)

// ClientIP keys IPv4 clients by address and IPv6 ones by their /64. Behind a
// trusted proxy it reads X-Forwarded-For right to left, skipping trusted
// hops; from any other peer the header, which the client wrote, is ignored.
func ExampleClientIP() {
	user := httplimit.ClientIP(httplimit.TrustProxies(netip.MustParsePrefix("10.0.0.0/8")))
	key := func(remote, forwardedFor string) string {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		if forwardedFor != "" {
			r.Header.Set("X-Forwarded-For", forwardedFor)
		}
		k, _ := user(r)
		return k
	}
	fmt.Println(key("192.0.2.1:4444", ""))
	fmt.Println(key("[2001:db8:1:2:aa::1]:4444", ""))
	fmt.Println(key("10.0.0.5:4444", "203.0.113.7, 198.51.100.9, 10.0.0.4"))
	fmt.Println(key("192.0.2.1:4444", "198.51.100.9"))
	// Output:
	// ip:192.0.2.1
	// ip:2001:db8:1:2::/64
	// ip:198.51.100.9
	// ip:192.0.2.1
}
