package envoyrls

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errNoProcNet: the system has no /proc/net/tcp (it is not Linux), so the
// owner of a listening socket cannot be told.
var errNoProcNet = errors.New("no /proc/net/tcp: the owners of listening sockets cannot be told")

// listenersOn returns the inodes of the TCP sockets, IPv4 and IPv6, that
// listen on port, on any local address, in this network namespace.
func listenersOn(port int) ([]uint64, error) {
	var inodes []uint64
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			if name == "/proc/net/tcp" {
				return nil, errNoProcNet
			}
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st ... inode: the local
			// address is HEXIP:HEXPORT, st 0A is LISTEN, the inode the
			// tenth field.
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
				continue
			}
			inode, err := strconv.ParseUint(fields[9], 10, 64)
			if err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("%s: inode %q: %w", name, fields[9], err)
			}
			inodes = append(inodes, inode)
		}
		err = sc.Err()
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return inodes, nil
}

// socketsOf returns the inodes of the sockets process pid holds open.
func socketsOf(pid int) (map[uint64]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[uint64]bool{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		if v, ok := strings.CutPrefix(target, "socket:["); ok {
			if inode, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
				out[inode] = true
			}
		}
	}
	return out, nil
}

// errForeignListener marks a port on which a process other than the one
// started listens.
var errForeignListener = errors.New("another process listens on the port")

// heldBy reports whether process pid listens on every one of ports, and
// only it: true when it does; false, nil while some port has no listener
// yet; an error wrapping errForeignListener when another process listens
// on one of them (as a process that took a probed port before pid could,
// or that shares it under SO_REUSEPORT); errNoProcNet where the owners
// cannot be told.
func heldBy(pid int, ports ...int) (bool, error) {
	// The listeners first, the process's sockets after: a listener the
	// process opens between the two reads is then one it holds, not one
	// seen listening but missing from its sockets.
	listeners := make([][]uint64, len(ports))
	for i, port := range ports {
		inodes, err := listenersOn(port)
		if err != nil {
			return false, err
		}
		listeners[i] = inodes
	}
	own, err := socketsOf(pid)
	if err != nil {
		return false, err
	}
	held := true
	for i, inodes := range listeners {
		if len(inodes) == 0 {
			held = false
		}
		for _, inode := range inodes {
			if !own[inode] {
				return false, fmt.Errorf("port %d: %w", ports[i], errForeignListener)
			}
		}
	}
	return held, nil
}

// TestHeldBy: heldBy tells a port this process listens on from one where
// another process does, or nobody.
func TestHeldBy(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip(errNoProcNet)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	port := lis.Addr().(*net.TCPAddr).Port
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	free := gone.Addr().(*net.TCPAddr).Port
	require.NoError(t, gone.Close())

	held, err := heldBy(os.Getpid(), port)
	require.NoError(t, err)
	assert.True(t, held, "this process listens on %d", port)

	// A child that holds no socket: the port is someone else's.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	child := exec.Command(sleep, "60")
	child.SysProcAttr = childproc.Attr() // it dies with the test binary
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	_, err = heldBy(child.Process.Pid, port)
	assert.ErrorIs(t, err, errForeignListener, "port %d is this process's, not the child's", port)

	// Nobody on free (unless another test took it meanwhile: then it is
	// someone else's, never this process's); a port of ports without a
	// listener leaves them not held.
	held, err = heldBy(os.Getpid(), port, free)
	if err != nil {
		assert.ErrorIs(t, err, errForeignListener)
	} else {
		assert.False(t, held, "nobody listens on %d", free)
	}
}
