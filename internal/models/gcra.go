package models

import (
	"math/big"
	"time"

	"github.com/hotlimit/hotlimit"
)

// GCRA is the reference of the gcra package: a sequential, exact
// (math/big.Rat) token bucket with a burst.
//
//   - A key the model does not hold is fresh: burst tokens.
//   - Time t is nanoseconds since the epoch; a reading before the epoch counts
//     as 0, and the wait until the epoch (lag) is added to every duration.
//   - At t a key holds min(burst, tokens + (t − last)·limit/window), for any
//     t: a clock behind last removes tokens (GCRA judges the stored TAT
//     against the earlier reading) and never adds any.
//   - Only an admission changes a key: tokens −= n, last = t.
//   - Sweep forgets the keys that are full, which are then fresh again.
//
// With Ticks, the model reads its clock floored to a tick, as a limiter
// that counts time in ticks does; the rest is unchanged, and waits are the
// least whole nanoseconds after which the floored clock gets there.
type GCRA struct {
	limit int
	burst int64
	cap   *big.Rat // tokens
	rate  *big.Rat // tokens per nanosecond
	perNs *big.Rat // ticks per nanosecond; nil: the clock is not floored
	epoch int64
	keys  map[string]*gcraKey
}

type gcraKey struct {
	tokens *big.Rat
	last   *big.Rat // nanoseconds since the epoch
}

// NewGCRA returns the model of limit per window with a capacity of burst
// requests, whose time 0 is the clock reading epoch.
func NewGCRA(limit, burst int, window time.Duration, epoch int64) *GCRA {
	return &GCRA{
		limit: limit,
		burst: int64(burst),
		cap:   new(big.Rat).SetInt64(int64(burst)),
		rate:  big.NewRat(int64(limit), int64(window)),
		epoch: epoch,
		keys:  map[string]*gcraKey{},
	}
}

// Ticks makes the model read its clock in ticks of den/num nanoseconds: a
// reading t nanoseconds after the epoch counts as ⌊t·num/den⌋·den/num. It
// returns m.
func (m *GCRA) Ticks(num, den uint64) *GCRA {
	m.perNs = new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den))
	return m
}

// floor returns the time x (nanoseconds) floored to a tick.
func (m *GCRA) floor(x *big.Rat) *big.Rat {
	if m.perNs == nil {
		return x
	}
	n := FloorRat(new(big.Rat).Mul(x, m.perNs))
	return new(big.Rat).Quo(new(big.Rat).SetInt64(n), m.perNs)
}

// at converts a clock reading to the model's time, the reading in
// nanoseconds since the epoch, and the lag behind the epoch.
func (m *GCRA) at(now int64) (t *big.Rat, ns, lag int64) {
	if now < m.epoch {
		return new(big.Rat), 0, m.epoch - now
	}
	ns = now - m.epoch
	return m.floor(new(big.Rat).SetInt64(ns)), ns, 0
}

// tokens returns key's tokens at t, as a new Rat.
func (m *GCRA) tokens(key string, t *big.Rat) *big.Rat {
	k, ok := m.keys[key]
	if !ok {
		return new(big.Rat).Set(m.cap)
	}
	x := new(big.Rat).Mul(m.rate, new(big.Rat).Sub(t, k.last))
	x.Add(x, k.tokens)
	if x.Cmp(m.cap) > 0 {
		x.Set(m.cap)
	}
	return x
}

// Take is Take(key, n) at the clock reading now.
func (m *GCRA) Take(key string, n int, now int64) hotlimit.Decision {
	t, ns, lag := m.at(now)
	x := m.tokens(key, t)
	d := hotlimit.Decision{Limit: m.limit}
	need := new(big.Rat).SetInt64(int64(n))
	switch {
	case n == 0:
		d.Allowed = true
	case n < 0 || int64(n) > m.burst:
		d.RetryAfter = hotlimit.Never
	case x.Cmp(need) >= 0:
		x.Sub(x, need)
		m.keys[key] = &gcraKey{tokens: x, last: t}
		d.Allowed = true
	default:
		d.RetryAfter = m.wait(x, need, t, ns, lag)
	}
	if x.Sign() > 0 {
		d.Remaining = int(FloorRat(x))
	}
	if x.Cmp(m.cap) < 0 {
		d.ResetAfter = m.wait(x, m.cap, t, ns, lag)
	}
	return d
}

// wait returns the least whole number of nanoseconds after which a key
// holding x < want ≤ burst tokens at the model's time t (read at ns) holds
// want: tokens grow linearly until the cap, and not at all until the clock
// reaches the epoch. The key holds want at the time u = t + (want − x)/rate,
// which the clock reads first at ⌈u⌉, or, floored to ticks, at the first
// nanosecond of the tick ⌈u·perNs⌉.
func (m *GCRA) wait(x, want, t *big.Rat, ns, lag int64) time.Duration {
	u := new(big.Rat).Sub(want, x)
	u.Quo(u, m.rate)
	u.Add(u, t)
	if m.perNs != nil {
		u.SetInt64(CeilRat(new(big.Rat).Mul(u, m.perNs)))
		u.Quo(u, m.perNs)
	}
	return time.Duration(lag + CeilRat(u) - ns)
}

// Sweep forgets every key full at now, and returns how many it forgot.
func (m *GCRA) Sweep(now int64) int {
	t, _, _ := m.at(now)
	n := 0
	for k := range m.keys {
		if m.tokens(k, t).Cmp(m.cap) >= 0 {
			delete(m.keys, k)
			n++
		}
	}
	return n
}

// Len returns the number of keys the model holds.
func (m *GCRA) Len() int { return len(m.keys) }

// Refund is Refund(key, r) at the clock reading now: a key it does not hold,
// or a full one, gets nothing; otherwise it gets back r.N tokens less what
// refilled since r.At (the time elapsed times the rate, none before the
// epoch, none when the clock reads before r.At), never above the burst.
func (m *GCRA) Refund(key string, r hotlimit.Receipt, now int64) {
	if r.N < 1 {
		return
	}
	if _, ok := m.keys[key]; !ok {
		return
	}
	t, _, _ := m.at(now)
	x := m.tokens(key, t)
	if x.Cmp(m.cap) >= 0 {
		return
	}
	tA, _, _ := m.at(r.At)
	give := new(big.Rat).SetInt64(min(int64(r.N), m.burst))
	if t.Cmp(tA) > 0 {
		give.Sub(give, new(big.Rat).Mul(m.rate, new(big.Rat).Sub(t, tA)))
	}
	if give.Sign() <= 0 {
		return
	}
	x.Add(x, give)
	if x.Cmp(m.cap) > 0 {
		x.Set(m.cap)
	}
	m.keys[key] = &gcraKey{tokens: x, last: t}
}
