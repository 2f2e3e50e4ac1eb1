//go:build !unix

package envoyrls

import "time"

// cpuTimes reports that the CPU times cannot be read: the benchmark reads
// them with getrusage and Linux's /proc.
func cpuTimes(pids []int) ([]time.Duration, bool) { return nil, false }
