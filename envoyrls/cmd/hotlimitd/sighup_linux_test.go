package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSIGHUPIgnoredUnderNohup: started with SIGHUP ignored, as nohup starts
// a command, hotlimitd leaves it ignored (the kernel's SigIgn mask of the
// process says so), so that the terminal's hangup does not stop it; SIGTERM
// still drains it.
func TestSIGHUPIgnoredUnderNohup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	dir := t.TempDir()
	writeRule(t, dir, "2")
	cmd, waitLog, exited := startCommand(t, func(bin string) *exec.Cmd {
		// trap '' HUP ignores SIGHUP, and exec keeps it ignored, as nohup does.
		return exec.Command("sh", "-c", `trap '' HUP; exec "$0" "$@"`, bin, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "")
	})
	waitLog("serving") // the signals are set up before the servers start

	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	require.NoError(t, err)
	var ignored uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			ignored, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err, "%q", line)
		}
	}
	assert.NotZero(t, ignored&(1<<(syscall.SIGHUP-1)), "SIGHUP still ignored (SigIgn %#x)", ignored)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitLog("shutting down")
	select {
	case err := <-exited:
		assert.NoError(t, err, "exit status 0")
	case <-time.After(30 * time.Second):
		t.Fatal("still running after SIGTERM")
	}
}
