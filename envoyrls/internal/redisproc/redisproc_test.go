package redisproc

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plain returns the arguments of a server on port, with password pass when
// it is not empty.
func plain(pass string) func(port int) []string {
	return func(port int) []string {
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
		if pass != "" {
			args = append(args, "--requirepass", pass)
		}
		return args
	}
}

// handOut makes the first port Start picks taken, and the next ones free.
// It replaces pickPort, so tests using it must not run in parallel.
func handOut(t *testing.T, taken int) {
	picks := 0
	pickPort = func(bus bool) (int, error) {
		picks++
		if picks == 1 {
			return taken, nil
		}
		return freePort(bus)
	}
	t.Cleanup(func() { pickPort = freePort })
}

// serverPid asks the server at addr for its process_id with go-redis.
func serverPid(t *testing.T, addr, pass string) int {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pass})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	require.NoError(t, err)
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			require.NoError(t, err)
			return pid
		}
	}
	t.Fatalf("no process_id in INFO server:\n%s", info)
	return 0
}

// TestStartSkipsAPortAnotherServerTook hands Start the port of a
// redis-server it did not start, with the same password or none: Start
// must not settle for that server answering, but end on a server of its
// own, on another port.
func TestStartSkipsAPortAnotherServerTook(t *testing.T) {
	for _, pass := range []string{"", "s3cret"} {
		t.Run("password="+pass, func(t *testing.T) {
			foreign, foreignProc, err := Start(t, Config{Args: plain(pass), Password: pass})
			require.NoError(t, err)
			handOut(t, mustPort(t, foreign))

			addr, proc, err := Start(t, Config{Args: plain(pass), Password: pass})
			require.NoError(t, err)
			assert.NotEqual(t, foreign, addr, "Start ended on the address of a server it did not start")
			assert.Equal(t, proc.Pid, serverPid(t, addr, pass), "the server at %s is the one Start launched", addr)
			assert.Equal(t, foreignProc.Pid, serverPid(t, foreign, pass), "the other server still runs")
		})
	}
}

// TestStartSkipsAListenerAnsweringAsAnotherPid hands Start the port of a
// listener that answers PING and INFO server as a process that is not
// redis-server's.
func TestStartSkipsAListenerAnsweringAsAnotherPid(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go fakeRedis(lis, 1)
	handOut(t, mustPort(t, lis.Addr().String()))

	addr, proc, err := Start(t, Config{Args: plain("")})
	require.NoError(t, err)
	assert.NotEqual(t, lis.Addr().String(), addr)
	assert.Equal(t, proc.Pid, serverPid(t, addr, ""))
}

// TestStartFailsWhenEveryPortIsTaken: when each attempt lands on a port
// another server holds, Start fails the test and says why, rather than
// handing it the other server.
func TestStartFailsWhenEveryPortIsTaken(t *testing.T) {
	Require(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go fakeRedis(lis, 1)
	taken := mustPort(t, lis.Addr().String())
	pickPort = func(bool) (int, error) { return taken, nil }
	t.Cleanup(func() { pickPort = freePort })

	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends this goroutine with runtime.Goexit
		defer close(done)
		_, _, _ = Start(rec, Config{Args: plain("")})
	}()
	<-done
	require.True(t, rec.failed, "Start failed the test")
	assert.Contains(t, rec.msg, "lost its port to another process")
	assert.Contains(t, rec.msg, "process_id 1")
}

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as testing's does.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fakeRedis answers every connection's PING with PONG and INFO server with
// process_id pid.
func fakeRedis(lis net.Listener, pid int) {
	for {
		conn, err := lis.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			r := bufio.NewReader(conn)
			for {
				cmd, err := readCommand(r)
				if err != nil {
					return
				}
				var reply string
				switch strings.ToUpper(cmd) {
				case "PING":
					reply = "+PONG\r\n"
				case "INFO":
					body := fmt.Sprintf("# Server\r\nredis_version:7.0.0\r\nprocess_id:%d\r\n", pid)
					reply = fmt.Sprintf("$%d\r\n%s\r\n", len(body), body)
				default:
					reply = "-ERR unknown command\r\n"
				}
				if _, err := conn.Write([]byte(reply)); err != nil {
					return
				}
			}
		}()
	}
}

// readCommand reads one RESP array of bulk strings and returns its first
// element.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return "", err
	}
	var first string
	for i := range n {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return "", err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = strings.TrimSpace(arg)
		}
	}
	return first, nil
}

func mustPort(t *testing.T, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return port
}

// TestStartOverTLSSkipsAListenerAnsweringAsAnotherPid is the TLS case: a
// TLS listener that the client configuration trusts answers PING and INFO
// server as another process; Start must end on the TLS server it started.
func TestStartOverTLSSkipsAListenerAnsweringAsAnotherPid(t *testing.T) {
	Require(t)
	certFile, keyFile := SelfSigned(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go fakeRedis(lis, 1)
	handOut(t, mustPort(t, lis.Addr().String()))

	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	clientTLS := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	addr, proc, err := Start(t, Config{
		TLS: clientTLS,
		Args: func(port int) []string {
			return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}
		},
	})
	if errors.Is(err, ErrExited) {
		t.Skipf("redis-server without TLS: %v", err)
	}
	require.NoError(t, err)
	assert.NotEqual(t, lis.Addr().String(), addr)
	require.NoError(t, identify(addr, proc.Pid, Config{TLS: clientTLS}, 5*time.Second), "the server at %s is the one Start launched", addr)
}
