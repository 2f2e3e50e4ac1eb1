package redislimit_test

import (
	"bytes"
	"context"
	"fmt"
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

// dropProxy forwards TCP connections to a Redis, and on demand drops a
// script call's reply: once armed, the next bytes a client sends that hold
// a script call (EVALSHA) are forwarded, and the first bytes Redis sends
// back on that connection are not: the connection is closed on both sides
// instead. The script has then run in Redis, and its client sees the
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

// dropNextReply arms the proxy: the reply to the next script call sent is
// dropped.
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
		var drop atomic.Bool // this connection's next reply is dropped
		p.wg.Go(func() {
			defer server.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				// marked before it is forwarded, so before Redis can answer
				if n > 0 && bytes.Contains(bytes.ToLower(buf[:n]), []byte("evalsha")) && p.armed.CompareAndSwap(true, false) {
					drop.Store(true)
				}
				if n > 0 {
					if _, werr := server.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
		p.wg.Go(func() {
			defer client.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && drop.Load() {
					p.dropped.Add(1)
					_ = server.Close()
					return
				}
				if n > 0 {
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

// aloneScripts counts a client's script calls sent by themselves.
type aloneScripts struct{ n atomic.Int64 }

func (h *aloneScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *aloneScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *aloneScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRefundLostReplyGivesBackOnce: a refund whose reply is lost with its
// connection (the script ran in Redis, the client reads EOF) is not sent
// again: a give-back made twice returns requests that were never taken.
// With a frozen clock, a key drained to its limit and refunded one request
// then admits exactly one more, for every algorithm, whatever the client's
// retries (go-redis retries a command, or a pipeline, on EOF by default):
// a refund sent by itself, and one sent in a batch while another call is
// in flight.
func TestRefundLostReplyGivesBackOnce(t *testing.T) {
	srv := redistest.Start(t)
	proxy := startDropProxy(t, srv.Addr)
	for _, batched := range []bool{false, true} {
		for _, a := range algorithms {
			t.Run(fmt.Sprintf("batched=%v/%v", batched, a), func(t *testing.T) {
				client := redis.NewClient(&redis.Options{Addr: proxy.Addr, ContextTimeoutEnabled: true})
				t.Cleanup(func() { _ = client.Close() })
				c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
				opts := []hotlimit.Option{frozenClock(), redislimit.WithPrefix(fmt.Sprintf("batched=%v:", batched))}
				if !batched {
					opts = append(opts, redislimit.WithBatch(0, 0))
				}
				lim := newExact(t, client, c, opts...)
				var r hotlimit.Receipt
				for i := range c.Limit {
					var d hotlimit.Decision
					d, r = lim.TakeReceipt("k", 1)
					require.True(t, d.Allowed, "request %d", i+1)
				}
				require.False(t, take(t, lim, "k", 1).Allowed, "the key is drained")

				var release func()
				alone := &aloneScripts{}
				if batched {
					h, held := holdFlusher(t, client, lim, nil, alone)
					release = func() {
						close(h.release)
						<-held
					}
				}
				proxy.dropNextReply()
				before, singles := proxy.dropped.Load(), alone.n.Load()
				err := lim.RefundContext(context.Background(), "k", r)
				require.Equal(t, before+1, proxy.dropped.Load(), "the refund's reply was dropped")
				assert.Error(t, err, "the refund's reply was lost")
				if release != nil {
					assert.Equal(t, singles, alone.n.Load(), "the refund went in a batch")
					release()
				}

				assert.True(t, take(t, lim, "k", 1).Allowed, "the refunded request passes again")
				assert.False(t, take(t, lim, "k", 1).Allowed, "and no more: the refund gave back once")
			})
		}
	}
}

// TestTakeLostReplyCountsTwice: a take whose reply is lost with its
// connection is sent again by go-redis (its MaxRetries, 3 by default), as
// the package's doc says: Redis runs it twice and the caller has the second
// answer, so the key counts one request more than its callers were told
// passed (under-admission, never over-admission). With the client's
// retries off, the lost reply is the call's error and the failure policy
// decides, Redis having counted the take once.
func TestTakeLostReplyCountsTwice(t *testing.T) {
	srv := redistest.Start(t)
	proxy := startDropProxy(t, srv.Addr)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute}
	clock := frozenClock()
	other := newExact(t, newClient(t, srv), c, clock)
	for _, retries := range []int{0, -1} {
		t.Run(fmt.Sprintf("MaxRetries=%d", retries), func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: proxy.Addr, ContextTimeoutEnabled: true, MaxRetries: retries})
			t.Cleanup(func() { _ = client.Close() })
			lim := newExact(t, client, c, clock, redislimit.WithBatch(0, 0), redislimit.WithFailPolicy(redislimit.FailClosed))
			key := fmt.Sprintf("k%d", retries)
			require.True(t, take(t, lim, key, 1).Allowed, "warm: a connection and the script")
			proxy.dropNextReply()
			d, err := lim.TakeContext(context.Background(), key, 1)
			require.Equal(t, int32(1), proxy.dropped.Swap(0), "the take's reply was dropped")
			if retries == 0 { // go-redis's default: 3 retries
				require.NoError(t, err, "the take was sent again")
				assert.True(t, d.Allowed)
				assert.Equal(t, c.Limit-3, d.Remaining, "the second run's answer")
				assert.Equal(t, c.Limit-3, take(t, other, key, 0).Remaining, "Redis counts the take twice")
			} else {
				require.Error(t, err, "the lost reply")
				assert.False(t, d.Allowed, "FailClosed decides")
				assert.Equal(t, c.Limit-2, take(t, other, key, 0).Remaining, "Redis counts the take once")
			}
		})
	}
}

// TestRefundAfterScriptFlush: a refund that meets NOSCRIPT (a SCRIPT FLUSH,
// a restarted server) is sent again with EVAL, which loads the script, and
// gives back exactly once, for every algorithm: sent by itself (EVALSHA,
// then EVAL), and in a batch (the pipeline's EVALSHA, then the call by
// itself).
func TestRefundAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, batched := range []bool{false, true} {
		for _, a := range algorithms {
			t.Run(fmt.Sprintf("batched=%v/%v", batched, a), func(t *testing.T) {
				client := newClient(t, srv)
				c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
				opts := []hotlimit.Option{frozenClock(), redislimit.WithPrefix(fmt.Sprintf("flush-batched=%v:", batched))}
				if !batched {
					opts = append(opts, redislimit.WithBatch(0, 0))
				}
				lim := newExact(t, client, c, opts...)
				var r hotlimit.Receipt
				for i := range c.Limit {
					var d hotlimit.Decision
					d, r = lim.TakeReceipt("k", 1)
					require.True(t, d.Allowed, "request %d", i+1)
				}
				var release func()
				alone := &aloneScripts{}
				if batched {
					h, held := holdFlusher(t, client, lim, nil, alone)
					release = func() {
						close(h.release)
						<-held
					}
				}
				require.NoError(t, client.ScriptFlush(ctx).Err())
				singles := alone.n.Load()
				require.NoError(t, lim.RefundContext(ctx, "k", r), "the refund after SCRIPT FLUSH")
				if release != nil {
					assert.Equal(t, singles+2, alone.n.Load(), "the batch's NOSCRIPT, then EVALSHA and EVAL by itself")
					release()
				}
				assert.True(t, take(t, lim, "k", 1).Allowed, "the refunded request passes again")
				assert.False(t, take(t, lim, "k", 1).Allowed, "and no more")
			})
		}
	}
}
