//go:build linux

package tokenbucket_test

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// threadCPU returns the CPU time of the calling OS thread: unlike the wall
// clock, it does not count the time the thread waited for a core, so it
// measures a call's own work on a loaded machine.
func threadCPU() time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// TestAutoSweepStalls measures the latency of each Allow while 2M distinct
// keys arrive at a limiter of 100 per minute with WithAutoSweep(1<<16), on the
// real clock, and logs p50, p99.9, the maximum and how many calls took over
// 1 ms, in wall time and in the thread's CPU time. It is a measurement, not a
// check, and runs only when HOTLIMIT_STALLS=1 (HOTLIMIT_STALLS_CAP=n adds
// WithMaxKeys(n)):
//
//	HOTLIMIT_STALLS=1 go test -run TestAutoSweepStalls -v ./tokenbucket/
func TestAutoSweepStalls(t *testing.T) {
	if os.Getenv("HOTLIMIT_STALLS") != "1" {
		t.Skip("a measurement: set HOTLIMIT_STALLS=1 to run it")
	}
	const n = 2_000_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	opts := []hotlimit.Option{hotlimit.WithAutoSweep(1 << 16)}
	if c, err := strconv.Atoi(os.Getenv("HOTLIMIT_STALLS_CAP")); err == nil {
		opts = append(opts, hotlimit.WithMaxKeys(c))
	}
	lim, err := tokenbucket.New(100, time.Minute, opts...)
	require.NoError(t, err)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := make([]time.Duration, n)
	cpu := make([]time.Duration, n)
	held := 0
	for i, k := range keys {
		c0, w0 := threadCPU(), time.Now()
		lim.Allow(k)
		wall[i], cpu[i] = time.Since(w0), threadCPU()-c0
		held = max(held, lim.Len())
	}
	for _, lat := range [][]time.Duration{wall, cpu} {
		over := 0
		for _, d := range lat {
			if d > time.Millisecond {
				over++
			}
		}
		slices.Sort(lat)
		t.Logf("p50=%v p99.9=%v max=%v over1ms=%d", lat[n/2], lat[n*999/1000], lat[n-1], over)
	}
	t.Logf("keys=%d held at the end=%d most held=%d (wall, then thread CPU)", n, lim.Len(), held)
}
