package models

import (
	"math"
	"math/big"
	"time"

	"github.com/hotlimit/hotlimit"
)

// SlidingLog is the reference of the slidinglog package: per key, the plain
// list of logged requests, each a time and whether a refund gave it back. A
// request is logged at the later of its clock reading and the key's newest
// logged time, and passes when fewer than limit of the last limit logged are
// in (t − window, t] and not refunded.
//
// Refunds (see Refund) bring in what the limiter does with its ring of the
// last limit requests, which no request log without them shows: a request
// that takes the place of a refunded one logged at t or later is logged 1 ns
// after it; Take(key, n > 1) checks the oldest and the n-th oldest of the
// last limit and then logs its requests one by one, so a refund that left
// the free entries out of claim order can deny it part way, with RetryAfter
// 1 ns and its first requests logged; and Remaining counts the free entries
// from the oldest of the last limit on, up to the first counted one
// (RemainingExact says when that is every free one).
//
// With Clamped, the model reads its clock as the limiter does: as the time
// since the limiter's epoch (its clock reading at New), clamped to
// [MinStamp + window, MaxStamp]; it saturates the 1 ns bump at MaxStamp, and
// waits Never for a request that would leave the window after MaxStamp, or
// after the clock reads math.MaxInt64 (which no clock passes); its
// waits still count from the clock reading itself. Its logged times are then
// times since the epoch; receipts (see Refund) keep the clock's.
type SlidingLog struct {
	limit  int
	window int64
	clamp  bool
	epoch  int64 // with clamp: the clock reading logged times count from
	logs   map[string][]slidingLogEntry
	// exact is false when the last Take's Remaining counted a prefix of
	// the free entries that is not all of them.
	exact bool
}

type slidingLogEntry struct {
	t        int64
	refunded bool
}

// The range of a sliding log's logged times, as package packed keeps them
// (2^61 − 2 ns and −2^61 ns).
const (
	slidingLogMaxStamp = math.MaxInt64>>2 - 1
	slidingLogMinStamp = math.MinInt64 >> 2
)

// NewSlidingLog returns the model of limit per window.
func NewSlidingLog(limit int, window time.Duration) *SlidingLog {
	return &SlidingLog{limit: limit, window: int64(window), logs: map[string][]slidingLogEntry{}, exact: true}
}

// Clamped makes the model read its clock as slidinglog.Limiter does, whose
// clock read epoch at New: as the time since epoch, clamped to
// [MinStamp + window, MaxStamp] (±2^61 ns around the epoch), with a fresh
// entry at MinStamp; it returns m.
func (m *SlidingLog) Clamped(epoch int64) *SlidingLog {
	m.clamp = true
	m.epoch = epoch
	return m
}

// now is the time the model decides on at the clock reading now.
func (m *SlidingLog) now(now int64) int64 {
	if !m.clamp {
		return now
	}
	return m.since(now, slidingLogMinStamp+m.window, slidingLogMaxStamp)
}

// since returns the clock reading c as a time since the epoch, exactly,
// clamped to [lo, hi].
func (m *SlidingLog) since(c, lo, hi int64) int64 {
	d := new(big.Int).Sub(big.NewInt(c), big.NewInt(m.epoch))
	switch {
	case d.Cmp(big.NewInt(lo)) < 0:
		return lo
	case d.Cmp(big.NewInt(hi)) > 0:
		return hi
	}
	return d.Int64()
}

// never is the time of an entry no request claimed: before every window.
func (m *SlidingLog) never() int64 {
	if m.clamp {
		return slidingLogMinStamp
	}
	return math.MinInt64
}

// lastL returns the key's last limit logged entries, oldest first, read
// as if padded in front with entries no request claimed (at the dawn of
// time) up to limit entries.
func (m *SlidingLog) lastL(key string) lastL {
	return lastL{log: m.logs[key], limit: m.limit, never: m.never()}
}

// lastL is a key's last limit logged entries.
type lastL struct {
	log   []slidingLogEntry
	limit int
	never int64
}

// at returns entry k, 0 the oldest.
func (l lastL) at(k int) slidingLogEntry {
	if i := len(l.log) - l.limit + k; i >= 0 {
		return l.log[i]
	}
	return slidingLogEntry{t: l.never}
}

// newest is the time of the key's newest logged request, or the dawn of
// time.
func (m *SlidingLog) newest(key string) int64 {
	log := m.logs[key]
	if len(log) == 0 {
		return m.never()
	}
	return log[len(log)-1].t
}

// claimable is slidinglog's rule: a claim at t may replace entry e, the
// oldest of the last limit, when e was refunded (the claim is then logged
// at t, or 1 ns after e when e is at t or later) or has left the window.
func (m *SlidingLog) claimable(e slidingLogEntry, t int64) (at int64, ok bool) {
	if e.refunded {
		at = max(t, e.t+1)
		if m.clamp {
			at = min(at, slidingLogMaxStamp)
		}
		return at, true
	}
	return t, e.t <= t-m.window
}

// free counts the entries of last free at t (refunded, or left the window)
// from the oldest on, up to the first counted one, and reports whether that
// is all of them.
func (m *SlidingLog) free(last lastL, t int64) (n int, exact bool) {
	all := 0
	for k := range m.limit {
		if e := last.at(k); e.refunded || e.t <= t-m.window {
			all++
			if all == k+1 {
				n++
			}
		}
	}
	return n, n == all
}

// decision reports a key of which free requests pass at t, newest its
// newest logged time, to a caller that read the clock at raw.
func (m *SlidingLog) decision(free int, raw, t, newest int64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: m.limit, Remaining: free}
	if free < m.limit && newest > t-m.window {
		d.ResetAfter = m.leaves(newest, raw)
	}
	return d
}

// leaves is how long after the clock reading raw a request logged at tv
// leaves the window; with Clamped, Never when that is past MaxStamp, where
// the clock stops, or past math.MaxInt64 on the clock, the latest reading
// there is, or past math.MaxInt64 ns (with a clock read before
// MinStamp + window, which stands still until the clock gets there).
func (m *SlidingLog) leaves(tv, raw int64) time.Duration {
	if !m.clamp {
		return time.Duration(tv + m.window - raw)
	}
	end := new(big.Int).Add(big.NewInt(tv), big.NewInt(m.window))
	clockEnd := new(big.Int).Add(end, big.NewInt(m.epoch)) // the clock reading then
	if end.Cmp(big.NewInt(slidingLogMaxStamp)) > 0 || !clockEnd.IsInt64() {
		return hotlimit.Never
	}
	d := clockEnd.Sub(clockEnd, big.NewInt(raw))
	if !d.IsInt64() {
		return hotlimit.Never
	}
	return time.Duration(d.Int64())
}

// wait is how long after the clock reading raw entry e lets a claim at t
// through.
func (m *SlidingLog) wait(e slidingLogEntry, t, raw int64) time.Duration {
	if _, ok := m.claimable(e, t); ok {
		return 0
	}
	return m.leaves(e.t, raw)
}

// Take is Take(key, n) at the clock reading raw.
func (m *SlidingLog) Take(key string, n int, raw int64) hotlimit.Decision {
	now := m.now(raw)
	m.exact = true
	if n < 1 || n > m.limit {
		d := hotlimit.Decision{Limit: m.limit, Remaining: m.limit}
		if _, ok := m.logs[key]; ok {
			newest := m.newest(key)
			t := max(now, newest)
			var free int
			free, m.exact = m.free(m.lastL(key), t)
			d = m.decision(free, raw, t, newest)
		}
		if n == 0 {
			d.Allowed = true
		} else {
			d.RetryAfter = hotlimit.Never
		}
		return d
	}
	var free int
	var at int64
	for k := range n {
		last, newest := m.lastL(key), m.newest(key)
		var ok bool
		at, ok = m.claimable(last.at(0), max(now, newest))
		if k == 0 {
			decisive := last.at(n - 1)
			if _, ok2 := m.claimable(decisive, at); !ok || !ok2 {
				var f int
				if ok {
					f, m.exact = m.free(last, at)
				}
				d := m.decision(f, raw, at, newest)
				d.RetryAfter = max(m.wait(last.at(0), at, raw), m.wait(decisive, at, raw))
				return d
			}
		} else if !ok {
			d := m.decision(0, raw, at, newest)
			d.RetryAfter = time.Nanosecond
			return d
		}
		if k == n-1 {
			free, m.exact = m.free(last, at)
		}
		m.logs[key] = append(m.logs[key], slidingLogEntry{t: at})
	}
	d := m.decision(free-min(free, 1), raw, at, at)
	d.Allowed = true
	return d
}

// TakeReceipt is Take plus the receipt the limiter gives with it: n
// requests, At the logged time of the first (the others are logged then or
// later), the zero Receipt when denied or n < 1. At is a clock reading: with
// Clamped, the epoch plus that time, saturated to the int64 range.
func (m *SlidingLog) TakeReceipt(key string, n int, raw int64) (hotlimit.Decision, hotlimit.Receipt) {
	before := len(m.logs[key])
	d := m.Take(key, n, raw)
	if !d.Allowed || n < 1 {
		return d, hotlimit.Receipt{}
	}
	at := m.logs[key][before].t
	if m.clamp {
		c := new(big.Int).Add(big.NewInt(m.epoch), big.NewInt(at))
		switch {
		case c.Cmp(big.NewInt(math.MaxInt64)) > 0:
			at = math.MaxInt64
		case c.Cmp(big.NewInt(math.MinInt64)) < 0:
			at = math.MinInt64
		default:
			at = c.Int64()
		}
	}
	return d, hotlimit.Receipt{N: n, At: at}
}

// RemainingExact reports whether the Remaining of the last Take counted
// every free entry. After a refund that read a later clock than a Take
// (before the clock stepped back), the free entries need not follow each
// other from the oldest on, and the limiter, which searches for where they
// end, may then count any number between the prefix and all of them.
func (m *SlidingLog) RemainingExact() bool { return m.exact }

// Refund is Refund(key, r) at now: while r.At is in the window at t (now,
// or the key's newest logged time if later), it marks up to r.N of the
// oldest of the last limit requests that still count at t as refunded.
// r.At is a clock reading, as the limiter's receipts hold: with Clamped,
// read as the time since the epoch.
func (m *SlidingLog) Refund(key string, r hotlimit.Receipt, now int64) {
	log, ok := m.logs[key]
	if r.N < 1 || !ok {
		return
	}
	t := max(m.now(now), m.newest(key))
	at := r.At
	if m.clamp {
		at = m.since(r.At, math.MinInt64, math.MaxInt64)
	}
	if at <= t-m.window {
		return
	}
	left := min(r.N, m.limit)
	for i := max(0, len(log)-m.limit); i < len(log) && left > 0; i++ {
		if e := &log[i]; !e.refunded && e.t > t-m.window {
			e.refunded = true
			left--
		}
	}
}

// PassedIn counts the logged times of key in (t − window, t], refunded ones
// included.
func (m *SlidingLog) PassedIn(key string, t int64) int {
	c := 0
	for _, e := range m.logs[key] {
		if e.t > t-m.window && e.t <= t {
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
	now = m.now(now)
	n := 0
	for key, log := range m.logs {
		if log[len(log)-1].t <= now-m.window {
			delete(m.logs, key)
			n++
		}
	}
	return n
}

// Len returns the number of keys the model holds.
func (m *SlidingLog) Len() int { return len(m.logs) }

// Clone returns a copy of m that shares nothing with it: what the copy is
// asked changes m in no way.
func (m *SlidingLog) Clone() *SlidingLog {
	c := *m
	c.logs = make(map[string][]slidingLogEntry, len(m.logs))
	for k, log := range m.logs {
		c.logs[k] = append([]slidingLogEntry(nil), log...)
	}
	return &c
}

// Newest returns the time of key's newest logged request (with Clamped, as
// a time since the epoch) and how many requests key has logged; 0 and none
// for a key the model does not hold.
func (m *SlidingLog) Newest(key string) (t int64, logged int) {
	log := m.logs[key]
	if len(log) == 0 {
		return 0, 0
	}
	return log[len(log)-1].t, len(log)
}

// Now returns the time the model decides on at the clock reading now: with
// Clamped, the time since the epoch, clamped; else now itself.
func (m *SlidingLog) Now(now int64) int64 { return m.now(now) }
