package main

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// startProxy forwards connections to target, and returns its address. What
// is read on a connection, from the client (answer false) or from target
// (answer true), is given to consume with the connection it is bound for:
// when consume returns true it has taken the bytes (kept them back, or
// dropped them), else they are forwarded. Either side's end closes the
// other. The test's cleanup closes every connection and waits for the
// pipes.
func startProxy(t *testing.T, target string, consume func(dst net.Conn, b []byte, answer bool) bool) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
		ended bool
	)
	// track holds c for the cleanup to close, or closes it if the cleanup
	// has already run: a connection accepted as the test ends is not left
	// open for its pipes to wait on.
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			_ = c.Close()
			return false
		}
		conns = append(conns, c)
		return true
	}
	pipe := func(dst, src net.Conn, answer bool) {
		defer wg.Done()
		defer func() { _ = dst.Close() }() // the other side sees the close
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			if consume(dst, buf[:n], answer) {
				continue
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			if !track(c) || !track(r) {
				_ = c.Close()
				_ = r.Close()
				continue
			}
			wg.Add(2)
			go pipe(r, c, false)
			go pipe(c, r, true)
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		mu.Lock()
		ended = true
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return lis.Addr().String()
}
