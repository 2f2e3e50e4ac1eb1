package envoyrls

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// gateBackend is a backend whose calls wait until want of them are under
// way at once (or the test's patience runs out, an error), as a remote
// store's calls would overlap if sent together; an in-memory limiter of the
// same Config decides them. Keys in fail get an error instead.
type gateBackend struct {
	want   int64
	active atomic.Int64
	open   chan struct{}
	once   sync.Once
	fail   map[string]bool // keys containing these fail
	refund atomic.Int64    // requests refunded
}

func newGateBackend(want int64, fail ...string) *gateBackend {
	g := &gateBackend{want: want, open: make(chan struct{}), fail: map[string]bool{}}
	for _, k := range fail {
		g.fail[k] = true
	}
	return g
}

func (g *gateBackend) factory(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	l, err := service.NewLimiter(c, opts...)
	if err != nil {
		return nil, err
	}
	return &gateLimiter{Limiter: l, g: g}, nil
}

// wait returns once want calls are under way, or an error after 10 s.
func (g *gateBackend) wait(ctx context.Context) error {
	if g.active.Add(1) >= g.want {
		g.once.Do(func() { close(g.open) })
	}
	select {
	case <-g.open:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the calls of one request did not overlap")
	case <-ctx.Done():
		return ctx.Err()
	}
}

type gateLimiter struct {
	hotlimit.Limiter
	g *gateBackend
}

func (l *gateLimiter) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := l.TakeReceiptContext(ctx, key, n)
	return d, err
}

func (l *gateLimiter) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if err := l.g.wait(ctx); err != nil {
		return hotlimit.Decision{}, hotlimit.Receipt{}, err
	}
	for k := range l.g.fail {
		if strings.Contains(key, k) {
			return hotlimit.Decision{}, hotlimit.Receipt{}, errors.New("backend down for " + k)
		}
	}
	d, r := l.Limiter.(hotlimit.Refunder).TakeReceipt(key, n)
	return d, r, nil
}

func (l *gateLimiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, r, _ := l.TakeReceiptContext(context.Background(), key, n)
	return d, r
}

func (l *gateLimiter) Refund(key string, r hotlimit.Receipt) {
	l.g.refund.Add(int64(r.N))
	l.Limiter.(hotlimit.Refunder).Refund(key, r)
}

func (l *gateLimiter) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	l.Refund(key, r)
	return nil
}

func gateServer(t *testing.T, g *gateBackend, opts ...Option) *Server {
	cfg, err := LoadDir("testdata/conformance")
	require.NoError(t, err)
	s, err := New(cfg, append([]Option{WithLogger(slog.New(slog.DiscardHandler)),
		WithLimiterOptions(hotlimit.WithFactory(g.factory))}, opts...)...)
	require.NoError(t, err)
	return s
}

// TestBackendDescriptorsOverlap: on a backend, the descriptors of one
// request are decided concurrently, so that they share round trips, and
// each still gets its own status, in order.
func TestBackendDescriptorsOverlap(t *testing.T) {
	g := newGateBackend(3)
	s := gateServer(t, g)
	req := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{
		desc("two_a", "x"), desc("unlimited", "x"), desc("two_b", "x"), desc("per_hour", "x"),
	}}
	resp, err := s.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err, "the three backend calls overlap")
	require.Len(t, resp.Statuses, 4)
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	for i, want := range []uint32{4, 1<<32 - 1, 1, 2} {
		assert.Equal(t, want, resp.Statuses[i].LimitRemaining, "status %d", i)
	}
	assert.Equal(t, uint32(5), resp.Statuses[0].CurrentLimit.RequestsPerUnit)
	assert.Equal(t, uint32(2), resp.Statuses[2].CurrentLimit.RequestsPerUnit)
	assert.Equal(t, uint32(3), resp.Statuses[3].CurrentLimit.RequestsPerUnit)
}

// TestBackendFailureRefundsOthers: in all-or-nothing mode, when one
// descriptor's backend call fails while the others' overlap it, the request
// gets Unavailable and what the others took is given back.
func TestBackendFailureRefundsOthers(t *testing.T) {
	g := newGateBackend(3, "two_b")
	s := gateServer(t, g, WithAllOrNothing(true))
	req := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{
		desc("two_a", "y"), desc("two_b", "y"), desc("per_hour", "y"),
	}}
	_, err := s.ShouldRateLimit(context.Background(), req)
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, int64(2), g.refund.Load(), "two_a's and per_hour's hits are refunded")
	// the gate is open now: calls pass without waiting
	one := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("two_a", "y")}}
	resp, err := s.ShouldRateLimit(context.Background(), one)
	require.NoError(t, err)
	assert.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining, "two_a counts only this request")
}
