package redislimit_test

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// dropProxy forwards TCP connections to a Redis, and on demand drops the
// next reply: once armed, the first bytes Redis sends back on any connection
// are not forwarded, and that connection is closed on both sides. The
// command they answer has then run in Redis, and its client sees the
// connection lost after sending it (io.EOF), as when a server, a proxy or a
// network path fails between a command and its reply.
type dropProxy struct {
	Addr    string
	target  string
	ln      net.Listener
	armed   atomic.Bool
	dropped atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

// startDropProxy starts a dropProxy in front of target, stopped by the
// test's cleanup.
func startDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// dropNextReply arms the proxy: the next reply Redis sends is dropped.
func (p *dropProxy) dropNextReply() { p.armed.Store(true) }

func (p *dropProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Go(func() {
			_, _ = io.Copy(server, client)
			_ = server.Close()
		})
		p.wg.Go(func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && p.armed.CompareAndSwap(true, false) {
					p.dropped.Add(1)
					_ = client.Close()
					_ = server.Close()
					return
				}
				if n > 0 {
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					_ = client.Close()
					return
				}
			}
		})
	}
}

// TestRefundLostReplyGivesBackOnce: a refund whose reply is lost with its
// connection (the script ran in Redis, the client reads EOF) is not sent
// again: a give-back made twice returns requests that were never taken.
// With a frozen clock, a key drained to its limit and refunded one request
// then admits exactly one more, for every algorithm, whatever the client's
// retries (go-redis retries a command on EOF by default).
func TestRefundLostReplyGivesBackOnce(t *testing.T) {
	srv := redistest.Start(t)
	proxy := startDropProxy(t, srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
			lim := newExact(t, client, c, frozenClock(), redislimit.WithBatch(0, 0))
			var r hotlimit.Receipt
			for i := range c.Limit {
				var d hotlimit.Decision
				d, r = lim.TakeReceipt("k", 1)
				require.True(t, d.Allowed, "request %d", i+1)
			}
			require.False(t, take(t, lim, "k", 1).Allowed, "the key is drained")

			proxy.dropNextReply()
			before := proxy.dropped.Load()
			err := lim.RefundContext(context.Background(), "k", r)
			require.Equal(t, before+1, proxy.dropped.Load(), "the refund's reply was dropped")
			assert.Error(t, err, "the refund's reply was lost")

			assert.True(t, take(t, lim, "k", 1).Allowed, "the refunded request passes again")
			assert.False(t, take(t, lim, "k", 1).Allowed, "and no more: the refund gave back once")
		})
	}
}
