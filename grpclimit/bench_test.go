package grpclimit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// transportStream is a grpc.ServerTransportStream that keeps the header of
// the last call, standing in for grpc-go's transport when the interceptor is
// called directly.
type transportStream struct{ header metadata.MD }

func (s *transportStream) Method() string                  { return unaryCall }
func (s *transportStream) SetHeader(md metadata.MD) error  { s.header = md; return nil }
func (s *transportStream) SendHeader(md metadata.MD) error { s.header = md; return nil }
func (s *transportStream) SetTrailer(metadata.MD) error    { return nil }

func noop(context.Context, any) (any, error) { return nil, nil }

// allowAll is a policy that never denies on the real clock: every row of
// the benchmarks is the allowed path.
var allowAll = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4_000_000, Window: time.Millisecond}

// BenchmarkUnary measures what the unary server interceptor adds to an
// allowed call. mode=direct calls the interceptor with a no-op handler, in a
// context holding a TCP peer and a stand-in transport stream, against
// calling the handler alone (mw=none): the interceptor's own cost.
// mode=bufconn makes real calls through grpc-go over an in-memory
// connection, with and without the interceptor: its cost inside a call,
// grpc-go's handling of the metadata included.
//
//	cd grpclimit && go test -run '^$' -bench BenchmarkUnary -benchmem -count 5 .
func BenchmarkUnary(b *testing.B) {
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	rows := []struct {
		name string
		opts []grpclimit.Option
		none bool
	}{
		{"mw=none", nil, true},
		{"mw=grpclimit", nil, false},
		{"mw=grpclimit-noheaders", []grpclimit.Option{grpclimit.WithRateLimitHeaders(false)}, false},
	}
	for _, rw := range rows {
		b.Run("mode=direct/"+rw.name, func(b *testing.B) {
			svc, err := service.New(allowAll)
			require.NoError(b, err)
			ts := &transportStream{}
			ctx := grpc.NewContextWithServerTransportStream(context.Background(), ts)
			ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
			call := noop
			if !rw.none {
				icpt := grpclimit.UnaryServerInterceptor(svc, rw.opts...)
				call = func(ctx context.Context, req any) (any, error) { return icpt(ctx, req, info, noop) }
			}
			_, err = call(ctx, nil)
			require.NoError(b, err)
			if !rw.none && len(rw.opts) == 0 {
				require.Equal(b, []string{`"fixedwindow-4000000-1ms";q=4000000;w=1`}, ts.header.Get("ratelimit-policy"))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = call(ctx, nil)
			}
		})
	}
	for _, rw := range rows {
		b.Run("mode=bufconn/"+rw.name, func(b *testing.B) {
			svc, err := service.New(allowAll)
			require.NoError(b, err)
			var sopts []grpc.ServerOption
			if !rw.none {
				sopts = append(sopts, grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, rw.opts...)))
			}
			client := testgrpc.NewTestServiceClient(serveBufconn(b, &testService{}, sopts))
			ctx := context.Background()
			req := &testgrpc.SimpleRequest{}
			_, err = client.UnaryCall(ctx, req)
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := client.UnaryCall(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
