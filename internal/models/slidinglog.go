package models

import (
	"math"
	"time"

	"github.com/hotlimit/hotlimit"
)

// SlidingLog is the reference of the slidinglog package: per key, the plain
// list of logged times. A request is logged at the later of its clock reading
// and the key's newest logged time, and passes when fewer than limit logged
// times are in (t − window, t].
type SlidingLog struct {
	limit  int
	window int64
	logs   map[string][]int64
}

// NewSlidingLog returns the model of limit per window.
func NewSlidingLog(limit int, window time.Duration) *SlidingLog {
	return &SlidingLog{limit: limit, window: int64(window), logs: map[string][]int64{}}
}

// lastL returns the key's last limit logged times, oldest first, padded in
// front with never-expiring-nothing (math.MinInt64) up to limit entries.
func (m *SlidingLog) lastL(key string) []int64 {
	log := m.logs[key]
	out := make([]int64, 0, m.limit)
	for range m.limit - min(len(log), m.limit) {
		out = append(out, math.MinInt64)
	}
	return append(out, log[max(0, len(log)-m.limit):]...)
}

// Take is Take(key, n) at now.
func (m *SlidingLog) Take(key string, n int, now int64) hotlimit.Decision {
	last := m.lastL(key)
	newest := last[m.limit-1]
	t := max(now, newest)
	if n == 0 && len(m.logs[key]) == 0 {
		return hotlimit.Decision{Allowed: true, Limit: m.limit, Remaining: m.limit}
	}
	inWindow := 0
	for _, ts := range last {
		if ts > t-m.window {
			inWindow++
		}
	}
	d := hotlimit.Decision{Limit: m.limit}
	switch {
	case n < 0 || n > m.limit:
		d.RetryAfter = hotlimit.Never
	case n == 0:
		d.Allowed = true
	case inWindow+n <= m.limit:
		d.Allowed = true
		for range n {
			m.logs[key] = append(m.logs[key], t)
		}
		inWindow += n
		newest = t
	default:
		d.RetryAfter = time.Duration(last[n-1] + m.window - now)
	}
	d.Remaining = m.limit - inWindow
	if newest > t-m.window {
		d.ResetAfter = time.Duration(newest + m.window - now)
	}
	return d
}

// PassedIn counts the logged times of key in (t − window, t].
func (m *SlidingLog) PassedIn(key string, t int64) int {
	c := 0
	for _, ts := range m.logs[key] {
		if ts > t-m.window && ts <= t {
			c++
		}
	}
	return c
}

// Sweep forgets, as slidinglog.Limiter.Sweep evicts, every key whose logged
// times are all at or before now − window, and returns how many it forgot.
// With a clock that never steps back that changes no later answer; one that
// does step back finds the key new.
func (m *SlidingLog) Sweep(now int64) int {
	n := 0
	for key, log := range m.logs {
		if log[len(log)-1] <= now-m.window {
			delete(m.logs, key)
			n++
		}
	}
	return n
}

// Len returns the number of keys the model holds.
func (m *SlidingLog) Len() int { return len(m.logs) }
