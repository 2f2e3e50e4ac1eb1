//go:build unix

package envoyrls

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes returns the CPU time, user and system, of this process and then
// of each of pids, and whether every one of them could be read (Linux's
// /proc).
func cpuTimes(pids []int) ([]time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil, false
	}
	times := []time.Duration{time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil, false
		}
		// pid (comm) state ppid ... utime stime: fields 14 and 15, the
		// 12th and 13th after the command's closing parenthesis.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) < 13 {
			return nil, false
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		s, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		times = append(times, time.Duration(u+s)*(time.Second/clockTicks))
	}
	return times, true
}

// clockTicks is the unit of /proc's CPU times per second (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTicks = 100
