package models

import (
	"iter"
	"maps"
	"math/big"
	"time"

	"github.com/hotlimit/hotlimit"
)

// TokenBucket is the reference token bucket: sequential, exact
// (math/big.Rat).
//
//   - A key the model does not hold is fresh: Cap = Burst tokens (Burst is
//     Limit unless a burst is given).
//   - At time t (nanoseconds since the epoch, a reading before the epoch
//     counting as 0) a key holds min(Cap, tokens + (t − last)·Limit/Window)
//     when t > last, else tokens unchanged: a clock that went back refills
//     nothing.
//   - Only an admission or a refund changes a key: tokens −= n (or += what
//     the refund gives, see Refund), last = max(last, t). (With a clock that
//     never goes back this is the same as refilling on every call, since
//     refills telescope.)
//   - Forget forgets a key, which is then fresh again.
type TokenBucket struct {
	Limit int64
	Burst int64
	Cap   *big.Rat // tokens
	Rate  *big.Rat // tokens per nanosecond
	Epoch int64
	keys  map[string]*tokenBucketKey
}

type tokenBucketKey struct {
	tokens *big.Rat
	last   int64
}

// NewTokenBucket returns the model of limit per window with a capacity of
// burst tokens, whose time 0 is the clock reading epoch.
func NewTokenBucket(limit, burst int, window time.Duration, epoch int64) *TokenBucket {
	return &TokenBucket{
		Limit: int64(limit),
		Burst: int64(burst),
		Cap:   new(big.Rat).SetInt64(int64(burst)),
		Rate:  big.NewRat(int64(limit), int64(window)),
		Epoch: epoch,
		keys:  map[string]*tokenBucketKey{},
	}
}

// At converts a clock reading to the model's time and the lag behind the
// epoch.
func (m *TokenBucket) At(now int64) (t, lag int64) {
	if now < m.Epoch {
		return 0, m.Epoch - now
	}
	return now - m.Epoch, 0
}

// Tokens returns key's tokens at model time t, refilled, as a new Rat.
func (m *TokenBucket) Tokens(key string, t int64) *big.Rat {
	k, ok := m.keys[key]
	if !ok {
		return new(big.Rat).Set(m.Cap)
	}
	x := new(big.Rat).Set(k.tokens)
	if t > k.last {
		x.Add(x, new(big.Rat).Mul(m.Rate, new(big.Rat).SetInt64(t-k.last)))
		if x.Cmp(m.Cap) > 0 {
			x.Set(m.Cap)
		}
	}
	return x
}

// Admit records an admission of n at model time t, whatever the tokens.
func (m *TokenBucket) Admit(key string, t, n int64) {
	x := m.Tokens(key, t)
	x.Sub(x, new(big.Rat).SetInt64(n))
	k, ok := m.keys[key]
	if !ok {
		k = &tokenBucketKey{last: t}
		m.keys[key] = k
	}
	k.tokens, k.last = x, max(k.last, t)
}

// Wait returns the least whole number of nanoseconds d after which key holds
// at least want tokens, from the clock reading now, with nothing taken.
func (m *TokenBucket) Wait(key string, now int64, want *big.Rat) int64 {
	t, lag := m.At(now)
	x := m.Tokens(key, t)
	if x.Cmp(want) >= 0 {
		return 0
	}
	d := lag
	if k, ok := m.keys[key]; ok && k.last > t {
		d += k.last - t // nothing refills until the clock is back at last
	}
	// ⌈(want − x)/rate⌉
	q := new(big.Rat).Sub(want, x)
	q.Quo(q, m.Rate)
	return d + CeilRat(q)
}

// Take is Take(key, n) at the clock reading now, as an exact limiter answers
// it: admitted when the key holds n tokens; Remaining the whole tokens left;
// RetryAfter and ResetAfter the exact waits, rounded up to the nanosecond.
func (m *TokenBucket) Take(key string, n int, now int64) hotlimit.Decision {
	t, _ := m.At(now)
	d := hotlimit.Decision{Limit: int(m.Limit)}
	want := new(big.Rat).SetInt64(int64(n))
	switch {
	case n < 0 || int64(n) > m.Burst:
		d.RetryAfter = hotlimit.Never
	case n == 0:
		d.Allowed = true
	case m.Tokens(key, t).Cmp(want) >= 0:
		m.Admit(key, t, int64(n))
		d.Allowed = true
	default:
		d.RetryAfter = time.Duration(m.Wait(key, now, want))
	}
	d.Remaining = int(FloorRat(m.Tokens(key, t)))
	d.ResetAfter = time.Duration(m.Wait(key, now, m.Cap))
	return d
}

// Refund is Refund(key, r) at the clock reading now (see
// hotlimit.Refunder): a key the model holds gets back r.N tokens (at most
// Burst) less what refilled from r.At to now, never above Cap; a key it does
// not hold, or a receipt of nothing, is left as it is. Time counts from r.At
// up to the later of now and the key's latest write: the refill the key had
// since the Take (none for a clock that stepped back behind r.At and a key
// not written since), as tokenbucket.Limiter.Refund documents it.
func (m *TokenBucket) Refund(key string, r hotlimit.Receipt, now int64) {
	k, ok := m.keys[key]
	if !ok || r.N < 1 {
		return
	}
	t, _ := m.At(now)
	at, _ := m.At(r.At)
	give := new(big.Rat).SetInt64(min(int64(r.N), m.Burst))
	if to := max(t, k.last); to > at {
		give.Sub(give, new(big.Rat).Mul(m.Rate, new(big.Rat).SetInt64(to-at)))
	}
	if give.Sign() <= 0 {
		return
	}
	x := m.Tokens(key, t)
	x.Add(x, give)
	if x.Cmp(m.Cap) > 0 {
		x.Set(m.Cap)
	}
	k.tokens, k.last = x, max(k.last, t)
}

// Keys iterates over the keys the model holds; the loop may Forget them.
func (m *TokenBucket) Keys() iter.Seq[string] { return maps.Keys(m.keys) }

// Forget forgets key, which is then fresh again.
func (m *TokenBucket) Forget(key string) { delete(m.keys, key) }

// Len returns the number of keys the model holds.
func (m *TokenBucket) Len() int { return len(m.keys) }
