//go:build linux

package redistest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// waitStopped polls /proc until p is in the stopped state, for at most a
// second, so that a caller of Pause can rely on the server no longer
// answering.
func waitStopped(p *os.Process) {
	path := "/proc/" + strconv.Itoa(p.Pid) + "/stat"
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		// The state follows the parenthesised command name.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			switch s[i+2] {
			case 'T', 't', 'Z', 'X':
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}
