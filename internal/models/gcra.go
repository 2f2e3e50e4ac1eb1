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
type GCRA struct {
	limit int
	burst int64
	cap   *big.Rat // tokens
	rate  *big.Rat // tokens per nanosecond
	epoch int64
	keys  map[string]*gcraKey
}

type gcraKey struct {
	tokens *big.Rat
	last   int64
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

// at converts a clock reading to the model's time and the lag behind the
// epoch.
func (m *GCRA) at(now int64) (t, lag int64) {
	if now < m.epoch {
		return 0, m.epoch - now
	}
	return now - m.epoch, 0
}

// tokens returns key's tokens at t, as a new Rat.
func (m *GCRA) tokens(key string, t int64) *big.Rat {
	k, ok := m.keys[key]
	if !ok {
		return new(big.Rat).Set(m.cap)
	}
	x := new(big.Rat).Mul(m.rate, new(big.Rat).SetInt64(t-k.last))
	x.Add(x, k.tokens)
	if x.Cmp(m.cap) > 0 {
		x.Set(m.cap)
	}
	return x
}

// Take is Take(key, n) at the clock reading now.
func (m *GCRA) Take(key string, n int, now int64) hotlimit.Decision {
	t, lag := m.at(now)
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
		d.RetryAfter = m.wait(x, need, lag)
	}
	if x.Sign() > 0 {
		d.Remaining = int(FloorRat(x))
	}
	if x.Cmp(m.cap) < 0 {
		d.ResetAfter = m.wait(x, m.cap, lag)
	}
	return d
}

// wait returns the least whole number of nanoseconds after which a key
// holding x < want ≤ burst tokens now holds want: tokens grow linearly until
// the cap, and not at all until the clock reaches the epoch.
func (m *GCRA) wait(x, want *big.Rat, lag int64) time.Duration {
	q := new(big.Rat).Sub(want, x)
	q.Quo(q, m.rate)
	return time.Duration(lag + CeilRat(q))
}

// Sweep forgets every key full at now, and returns how many it forgot.
func (m *GCRA) Sweep(now int64) int {
	t, _ := m.at(now)
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
