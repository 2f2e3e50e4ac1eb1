package grpclimit_test

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestLongMethodStreamMessageAllocatesNothing: a server with
// grpc.UnknownServiceHandler takes any method a client sends, up to
// grpc-go's 16 MiB header limit, and keys one past 256 bytes by its digest.
// With WithStreamMessages, each message of such a stream is decided under
// that key, which is made once per stream: a message, a few bytes the
// client sends, costs no digest of the method and allocates nothing, as
// one of a stream of a short method does.
func TestLongMethodStreamMessageAllocatesNothing(t *testing.T) {
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	var apis []string
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false),
		grpclimit.WithObserver(func(e grpclimit.Event) {
			if len(apis) < 3 {
				apis = append(apis, e.API)
			}
		}))
	long := "/x.Y/" + strings.Repeat("m", 1<<20)
	allocs := allocsPerMessage(t, icpt, recvStream{ctx: ctx}, long, 20)
	assert.Zero(t, allocs, "allocations per received message")
	key, _ := grpclimit.FullMethod(context.Background(), long, nil)
	require.Len(t, apis, 3)
	assert.Equal(t, []string{key, "RECV " + key, "RECV " + key}, apis, "the start and its messages keep their keys")
}

// TestLongMetadataUserKeyIsDigestedOncePerStream: Metadata keys a value
// past 256 bytes by its digest. With WithStreamMessages the user is found
// again for each message, but a stream's metadata are sent once, at its
// start: each message, a few bytes the client sends, must not cost a copy
// and a digest of a value of up to 16 MiB. A message of a stream whose
// x-api-key holds 1 MiB allocates a small fraction of that, and is keyed
// as the start is.
func TestLongMetadataUserKeyIsDigestedOncePerStream(t *testing.T) {
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	value := strings.Repeat("k", 1<<20)
	var users []string
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", value))
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false),
		grpclimit.WithUser(grpclimit.Metadata("x-api-key")),
		grpclimit.WithObserver(func(e grpclimit.Event) {
			if len(users) < 3 {
				users = append(users, e.User)
			}
		}))
	const messages = 20
	perMessage := bytesPerMessage(t, icpt, recvStream{ctx: ctx}, duplexCall, messages)
	assert.Less(t, perMessage, uint64(len(value)/64), "bytes allocated per message, against a value of %d", len(value))
	require.Len(t, users, 3)
	assert.Equal(t, []string{grpclimit.MetadataKey("x-api-key", value), users[0], users[0]}, users,
		"the start and its messages keep the value's key")
}

// TestManyMetadataValuesAreReadOncePerStream: grpc-go hands a key function
// a copy of every value of a metadata entry, and a client may send one
// entry hundreds of thousands of times in the headers of a stream (HPACK
// sends each repeat in a byte). With WithStreamMessages the user is found
// again for each message, so each message, a few bytes, must not cost a
// copy of them all: a stream's metadata do not change, and the keys found
// in them are found once per stream, for Metadata and for PeerIP behind a
// trusted proxy alike, each message keyed as the start is.
func TestManyMetadataValuesAreReadOncePerStream(t *testing.T) {
	const values, messages = 20_000, 20
	proxy := netip.MustParseAddr("10.0.0.1")
	for name, c := range map[string]struct {
		user  grpclimit.KeyFunc
		api   grpclimit.KeyFunc // nil: the default
		entry string
		want  string
	}{
		"Metadata":              {grpclimit.Metadata("x-api-key"), nil, "x-api-key", grpclimit.MetadataKey("x-api-key", "k-1")},
		"PeerIP behind a proxy": {grpclimit.PeerIP(grpclimit.TrustProxies(netip.PrefixFrom(proxy, 32))), nil, "x-forwarded-for", "ip:192.0.2.7"},
		// Two key functions remembered side by side, neither pushing the
		// other's key out.
		"Metadata for user and API": {grpclimit.Metadata("x-api-key"), grpclimit.Metadata("x-api-key"), "x-api-key", grpclimit.MetadataKey("x-api-key", "k-1")},
	} {
		t.Run(name, func(t *testing.T) {
			svc, err := service.New(allowAll)
			require.NoError(t, err)
			vals := make([]string, 0, values)
			vals = append(vals, "k-1") // Metadata reads the first value
			for range values - 2 {
				vals = append(vals, "192.0.2.9")
			}
			vals = append(vals, "192.0.2.7") // PeerIP the last
			ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{c.entry: vals})
			ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: proxy.AsSlice(), Port: 51234}})
			var users []string
			opts := []grpclimit.Option{grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false),
				grpclimit.WithUser(c.user), grpclimit.WithObserver(func(e grpclimit.Event) {
					if len(users) < 3 {
						users = append(users, e.User)
					}
				})}
			if c.api != nil {
				opts = append(opts, grpclimit.WithAPI(c.api))
			}
			icpt := grpclimit.StreamServerInterceptor(svc, opts...)
			perMessage := bytesPerMessage(t, icpt, recvStream{ctx: ctx}, duplexCall, messages)
			assert.Less(t, perMessage, uint64(values), "bytes allocated per message, against %d values", values)
			assert.Equal(t, []string{c.want, c.want, c.want}, users, "the start and its messages keep the key")
		})
	}
}

// bytesPerMessage runs icpt's stream ss of method, and returns how many bytes
// a message it receives allocates, averaged over the messages received after
// the first.
func bytesPerMessage(t *testing.T, icpt grpc.StreamServerInterceptor, ss grpc.ServerStream, method string, messages int) uint64 {
	t.Helper()
	var perMessage uint64
	err := icpt(nil, ss, &grpc.StreamServerInfo{FullMethod: method}, func(_ any, ss grpc.ServerStream) error {
		var m struct{}
		require.NoError(t, ss.RecvMsg(&m))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range messages {
			if err := ss.RecvMsg(&m); err != nil {
				return err
			}
		}
		runtime.ReadMemStats(&after)
		perMessage = (after.TotalAlloc - before.TotalAlloc) / uint64(messages)
		return nil
	})
	require.NoError(t, err)
	return perMessage
}
