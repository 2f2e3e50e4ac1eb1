package grpclimit_test

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestPeerIPPrefixes: the key PeerIP gives a peer under IPv4Prefix and
// IPv6Prefix, as their docs say: 32 and 64 bits by default, each clamped
// to its range ([1, 32], [1, 128]), and IPv4Prefix applied to the IPv4
// address of an IPv4-mapped address and of one within 64:ff9b::/96.
func TestPeerIPPrefixes(t *testing.T) {
	cases := []struct {
		name string
		opts []grpclimit.IPOption
		peer string
		want string
	}{
		{"IPv4 default: the address", nil, "192.0.2.77", "ip:192.0.2.77"},
		{"IPv4 /24", []grpclimit.IPOption{grpclimit.IPv4Prefix(24)}, "192.0.2.77", "ip:192.0.2.0/24"},
		{"IPv4 under 1 is 1", []grpclimit.IPOption{grpclimit.IPv4Prefix(0)}, "192.0.2.77", "ip:128.0.0.0/1"},
		{"IPv4 over 32 is 32", []grpclimit.IPOption{grpclimit.IPv4Prefix(33)}, "192.0.2.77", "ip:192.0.2.77"},
		{"IPv4-mapped /24", []grpclimit.IPOption{grpclimit.IPv4Prefix(24)}, "::ffff:192.0.2.77", "ip:192.0.2.0/24"},
		{"NAT64 /24", []grpclimit.IPOption{grpclimit.IPv4Prefix(24)}, "64:ff9b::192.0.2.77", "ip:192.0.2.0/24"},
		{"NAT64 untouched by IPv6Prefix", []grpclimit.IPOption{grpclimit.IPv6Prefix(32)}, "64:ff9b::192.0.2.77", "ip:192.0.2.77"},
		{"IPv6 default: /64", nil, "2001:db8:1:2ff::1", "ip:2001:db8:1:2ff::/64"},
		{"IPv6 /56", []grpclimit.IPOption{grpclimit.IPv6Prefix(56)}, "2001:db8:1:2ff::1", "ip:2001:db8:1:200::/56"},
		{"IPv6 under 1 is 1", []grpclimit.IPOption{grpclimit.IPv6Prefix(-5)}, "2001:db8:1:2ff::1", "ip:::/1"},
		{"IPv6 over 128 is 128", []grpclimit.IPOption{grpclimit.IPv6Prefix(129)}, "2001:db8:1:2ff::1", "ip:2001:db8:1:2ff::1"},
		{"IPv6 untouched by IPv4Prefix", []grpclimit.IPOption{grpclimit.IPv4Prefix(8)}, "2001:db8:1:2ff::1", "ip:2001:db8:1:2ff::/64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := netip.MustParseAddr(tc.peer)
			ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: addr.AsSlice(), Port: 443}})
			key, ok := grpclimit.PeerIP(tc.opts...)(ctx, "/a.B/C", nil)
			assert.True(t, ok)
			assert.Equal(t, tc.want, key)
		})
	}
}
