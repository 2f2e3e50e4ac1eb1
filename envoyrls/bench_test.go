package envoyrls

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"os/exec"
)

// okServer answers OK to every descriptor without deciding: the cost of
// gRPC itself, which the memory backend is measured against.
type okServer struct {
	pb.UnimplementedRateLimitServiceServer
}

func (okServer) ShouldRateLimit(_ context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(req.Descriptors))}
	for i := range resp.Statuses {
		resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
	}
	return resp, nil
}

// serveBench serves srv on loopback and returns its address.
func serveBench(b *testing.B, srv pb.RateLimitServiceServer) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	g := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(g, srv)
	go func() { _ = g.Serve(lis) }()
	b.Cleanup(g.Stop)
	return lis.Addr().String()
}

// BenchmarkShouldRateLimit measures ShouldRateLimit per second over loopback
// gRPC, each client on its own connection as Envoy's workers are, for the
// memory backend, the Redis backend (when redis-server is installed) and a
// handler that answers OK without deciding (impl=ok). Each request holds
// one descriptor of two entries, over 1024 keys per client. With
// HOTLIMITD_BENCH_ADDR set, impl=external measures the rate limit service
// at that address the same way, which must have testdata/bench as its
// configuration.
func BenchmarkShouldRateLimit(b *testing.B) {
	cfg, err := LoadDir("testdata/bench")
	require.NoError(b, err)
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	impls := []struct {
		name string
		make func(b *testing.B) string // the address to measure
	}{
		{"ok", func(b *testing.B) string { return serveBench(b, okServer{}) }},
		{"memory", func(b *testing.B) string {
			s, err := New(cfg, quiet)
			require.NoError(b, err)
			return serveBench(b, s)
		}},
		{"redis", func(b *testing.B) string {
			if _, err := exec.LookPath("redis-server"); err != nil {
				b.Skip("redis-server not installed")
			}
			addr := benchRedis(b)
			client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 64})
			b.Cleanup(func() { _ = client.Close() })
			s, err := New(cfg, quiet, WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(time.Second)))))
			require.NoError(b, err)
			return serveBench(b, s)
		}},
	}
	if addr := os.Getenv("HOTLIMITD_BENCH_ADDR"); addr != "" {
		impls = append(impls, struct {
			name string
			make func(b *testing.B) string
		}{"external", func(*testing.B) string { return addr }})
	}
	for _, impl := range impls {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("impl=%s/clients=%d", impl.name, clients), func(b *testing.B) {
				addr := impl.make(b)
				stubs := make([]pb.RateLimitServiceClient, clients)
				for i := range stubs {
					stubs[i] = dial(b, addr)
				}
				run := strconv.FormatInt(time.Now().UnixNano(), 36) // fresh keys on a server that outlives the run
				reqs := make([][]*pb.RateLimitRequest, clients)
				for c := range reqs {
					for k := range 1024 {
						reqs[c] = append(reqs[c], &pb.RateLimitRequest{Domain: "bench", Descriptors: []*rlext.RateLimitDescriptor{{
							Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "client", Value: run + strconv.Itoa(c)}, {Key: "ip", Value: strconv.Itoa(k)}},
						}}})
					}
				}
				require.Len(b, reqs[clients-1], 1024)
				// Warm up each connection and check the fixture decides.
				for c := range stubs {
					resp, err := stubs[c].ShouldRateLimit(context.Background(), reqs[c][0])
					require.NoError(b, err)
					require.Equal(b, pb.RateLimitResponse_OK, resp.OverallCode)
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for c := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; next.Add(1) <= int64(b.N); i++ {
							if _, err := stubs[c].ShouldRateLimit(context.Background(), reqs[c][i%1024]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			})
		}
	}
}

// benchRedis starts a redis-server for a benchmark.
func benchRedis(b *testing.B) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	port := lis.Addr().(*net.TCPAddr).Port
	require.NoError(b, lis.Close())
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	require.Eventually(b, func() bool { return c.Ping(context.Background()).Err() == nil }, 10*time.Second, 20*time.Millisecond)
	return addr
}

// BenchmarkHandler measures the handlers themselves, without gRPC: what
// deciding adds to a ShouldRateLimit call (impl=memory) over answering OK
// (impl=ok), in CPU time and allocations, which a loaded machine distorts
// far less than a round trip.
func BenchmarkHandler(b *testing.B) {
	cfg, err := LoadDir("testdata/bench")
	require.NoError(b, err)
	mem, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(b, err)
	reqs := make([]*pb.RateLimitRequest, 1024)
	for k := range reqs {
		reqs[k] = &pb.RateLimitRequest{Domain: "bench", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "client", Value: "c"}, {Key: "ip", Value: strconv.Itoa(k)}},
		}}}
	}
	for _, impl := range []struct {
		name string
		srv  pb.RateLimitServiceServer
	}{{"ok", okServer{}}, {"memory", mem}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			resp, err := impl.srv.ShouldRateLimit(context.Background(), reqs[0])
			require.NoError(b, err)
			require.Len(b, resp.Statuses, 1)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					_, _ = impl.srv.ShouldRateLimit(context.Background(), reqs[i%1024])
				}
			})
		})
	}
}
