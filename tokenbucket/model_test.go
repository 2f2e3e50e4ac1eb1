package tokenbucket

import (
	"math/big"
	"time"
)

// model is the reference token bucket: sequential, exact (math/big.Rat),
// written from the package documentation and nothing else.
//
//   - A key the model does not hold is fresh: cap = Burst tokens (Burst is
//     Limit unless a burst is given).
//   - At time t (nanoseconds since the epoch, a reading before the epoch
//     counting as 0) a key holds min(cap, tokens + (t − last)·Limit/Window)
//     when t > last, else tokens unchanged: a clock that went back refills
//     nothing.
//   - Only an admission changes a key: tokens −= n, last = max(last, t). (With
//     a clock that never goes back this is the same as refilling on every
//     call, since refills telescope.)
//   - refund gives n tokens back, capped at cap: tokens = min(cap, tokens(t)
//   - n), last = max(last, t).
//   - evict forgets a key, which is then fresh again.
type model struct {
	limit int64
	burst int64
	cap   *big.Rat // tokens
	rate  *big.Rat // tokens per nanosecond
	epoch int64
	keys  map[string]*modelKey
}

type modelKey struct {
	tokens *big.Rat
	last   int64
}

func newModel(limit, burst int, window time.Duration, epoch int64) *model {
	return &model{
		limit: int64(limit),
		burst: int64(burst),
		cap:   new(big.Rat).SetInt64(int64(burst)),
		rate:  big.NewRat(int64(limit), int64(window)),
		epoch: epoch,
		keys:  map[string]*modelKey{},
	}
}

// at converts a clock reading to the model's time and the lag behind the
// epoch.
func (m *model) at(now int64) (t, lag int64) {
	if now < m.epoch {
		return 0, m.epoch - now
	}
	return now - m.epoch, 0
}

// tokens returns key's tokens at t, refilled, as a new Rat.
func (m *model) tokens(key string, t int64) *big.Rat {
	k, ok := m.keys[key]
	if !ok {
		return new(big.Rat).Set(m.cap)
	}
	x := new(big.Rat).Set(k.tokens)
	if t > k.last {
		x.Add(x, new(big.Rat).Mul(m.rate, new(big.Rat).SetInt64(t-k.last)))
		if x.Cmp(m.cap) > 0 {
			x.Set(m.cap)
		}
	}
	return x
}

// take records an admission of n at t.
func (m *model) take(key string, t, n int64) {
	x := m.tokens(key, t)
	x.Sub(x, new(big.Rat).SetInt64(n))
	k, ok := m.keys[key]
	if !ok {
		k = &modelKey{last: t}
		m.keys[key] = k
	}
	k.tokens, k.last = x, max(k.last, t)
}

// wait returns the least whole number of nanoseconds d after which key holds
// at least want tokens, from the clock reading now, with nothing taken.
func (m *model) wait(key string, now int64, want *big.Rat) int64 {
	t, lag := m.at(now)
	x := m.tokens(key, t)
	if x.Cmp(want) >= 0 {
		return 0
	}
	d := lag
	if k, ok := m.keys[key]; ok && k.last > t {
		d += k.last - t // nothing refills until the clock is back at last
	}
	// ⌈(want − x)/rate⌉
	q := new(big.Rat).Sub(want, x)
	q.Quo(q, m.rate)
	return d + ceilRat(q)
}

// ceilRat returns ⌈q⌉ for q ≥ 0 that fits an int64.
func ceilRat(q *big.Rat) int64 {
	n, r := new(big.Int).QuoRem(q.Num(), q.Denom(), new(big.Int))
	if r.Sign() > 0 {
		n.Add(n, big.NewInt(1))
	}
	return n.Int64()
}

// floorRat returns ⌊q⌋ for q that fits an int64.
func floorRat(q *big.Rat) int64 {
	return new(big.Int).Div(q.Num(), q.Denom()).Int64() // Euclidean: floored, as Denom > 0
}
