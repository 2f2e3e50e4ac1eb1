package packed

import "math/bits"

// Token bucket word, per key:
//
//	| tokens, in units (64−T bits)  | last refill, in units mod 2^T (T bits) |
//	| bits 63..T                    | bits T−1..0                            |
//
// A unit is 1/2^F of a token, F chosen per limiter (see [NewBucket]). Time is
// measured in units too: u(t) = ⌊t·Limit·2^F / Window⌋ is the number of units
// refilled from the limiter's epoch to t (t in nanoseconds since the epoch).
// The word stores u(last refill) modulo 2^T; a refill adds u(now) − u(last),
// an exact integer, so refills telescope: however many calls split an
// interval, together they add exactly u(end) − u(start), and no rounding error
// accumulates. Where the exact model lands on a whole token, so does u.
//
// The token field holds at most Cap = Burst·2^F (the capacity, Burst tokens;
// Burst is Limit unless the limiter sets another); its all-ones value is never
// a token count and marks a dead (evicted) word, [BucketDead]. The refill rate
// is Limit per Window whatever the capacity: PerWindow = Limit·2^F units.
//
// Wrap-around: a forward distance u(now) − last below 2^(T−1) is read as
// elapsed time, one at or above it as a clock that stepped back (no refill).
// So a stored word that is not full must be read again, or evicted, within
// 2^(T−1) units of time; [Bucket.Range] gives that span in nanoseconds. A
// full word's timestamp is never read: Refill of a full word returns Cap and
// now, so a fresh word, Pack(Cap, 0), stays valid forever.

// BucketDead is the tombstone of a token bucket word: no live word equals it,
// since its token field, all ones, is above every capacity.
const BucketDead = ^uint64(0)

// Bucket is the layout of one token bucket limiter's words.
type Bucket struct {
	// Cap is the capacity in units: Burst·2^FracBits.
	Cap uint64
	// FracBits is F: a unit is 1/2^F of a token.
	FracBits uint
	// TickBits is T, the width of the timestamp field.
	TickBits uint
	// PerWindow is the number of units refilled per Window: Limit·2^F.
	PerWindow uint64
	// Window is the refill window in nanoseconds.
	Window uint64

	// The timestamp field's mask, 2^T − 1, and half its range, 2^(T−1): the
	// forward distance from which Refill reads a timestamp as ahead.
	mask, half uint64

	// units is the rate PerWindow/Window, for Units.
	units Scale
}

// MaxFracBits bounds F: at most 2^32 units per token.
const MaxFracBits = 32

// NewBucket returns the layout for a capacity of burst tokens refilled at
// limit tokens per window nanoseconds, with fracBits fractional bits. The
// token field is as wide as the capacity needs; the timestamp takes the rest.
// The caller checks ranges: limit ≥ 1, burst ≥ 1, 1 ≤ window < 2^63, fracBits ≤
// MaxFracBits, and limit·2^fracBits < 2^62 and burst·2^fracBits < 2^62.
func NewBucket(limit, burst, window uint64, fracBits uint) Bucket {
	capUnits := burst << fracBits
	tokenBits := uint(bits.Len64(capUnits + 1)) // room for Cap and the all-ones tombstone
	b := Bucket{
		Cap:       capUnits,
		FracBits:  fracBits,
		TickBits:  64 - tokenBits,
		PerWindow: limit << fracBits,
		Window:    window,
	}
	b.mask, b.half = 1<<b.TickBits-1, 1<<(b.TickBits-1)
	b.units = NewScale(b.PerWindow, window)
	return b
}

// Range is the span of time, in nanoseconds, over which a stored timestamp
// still reads unambiguously: 2^(T−1) units of refill time, saturated at
// 2^63−1.
func (b *Bucket) Range() uint64 {
	hi, lo := bits.Mul64(uint64(1)<<(b.TickBits-1), b.Window)
	if hi >= b.PerWindow {
		return 1<<63 - 1
	}
	q, _ := bits.Div64(hi, lo, b.PerWindow)
	return min(q, 1<<63-1)
}

// Pack builds a word from a token count (at most Cap) and a timestamp in
// units; the timestamp is kept modulo 2^T.
func (b *Bucket) Pack(tokens, last uint64) uint64 {
	t := b.TickBits & 63 // T < 64: the compiler then needs no check of the shift
	return tokens<<t | last&b.mask
}

// Unpack splits a word into its token count and its timestamp modulo 2^T.
func (b *Bucket) Unpack(w uint64) (tokens, last uint64) {
	t := b.TickBits & 63 // as in Pack
	return w >> t, w & b.mask
}

// Units returns u(t) = ⌊t·PerWindow/Window⌋ modulo 2^64 and the remainder
// t·PerWindow mod Window, for t nanoseconds since the epoch, exactly as the
// 128/64-bit division would, for every t, without dividing (see
// [Scale.Apply]): a Bucket must come from NewBucket. A caller that drops rem
// drops two multiplications too.
func (b *Bucket) Units(t uint64) (u, rem uint64) {
	return b.units.Apply(t)
}

// Refill returns the tokens and timestamp of a word read at now (in units),
// refilled: tokens grow by the units elapsed since last, up to Cap. A now
// behind last (a clock that stepped back, seen as a forward distance of
// 2^(T−1) or more) refills nothing and keeps last. A full word (tokens ≥ Cap)
// returns Cap and now whatever its timestamp: nothing is missing, so the time
// it was last refilled carries nothing.
//
// The branches are deliberate: a bucket that refills to full, the common case
// of a key under its limit, returns Cap on a predicted branch, so its result
// waits for now only, not for the subtraction and comparison that a min would
// put between the word and the result.
func (b *Bucket) Refill(tokens, last, now uint64) (uint64, uint64) {
	if tokens >= b.Cap {
		return b.Cap, now & b.mask
	}
	elapsed := (now - last) & b.mask
	if elapsed >= b.half {
		return tokens, last
	}
	if elapsed >= b.Cap-tokens {
		return b.Cap, now & b.mask
	}
	return tokens + elapsed, now & b.mask
}

// Wait returns the nanoseconds until need more units have been refilled, when
// the clock's current remainder (from Units) is rem: the least d with
// u(t+d) ≥ u(t)+need, that is ⌈(need·Window − rem)/PerWindow⌉. The caller
// keeps need·Window below PerWindow·2^64, so that the result fits 64 bits: for
// need ≤ Cap it is at most Window·Burst/Limit, the time to fill an empty
// bucket.
func (b *Bucket) Wait(need, rem uint64) uint64 {
	if need == 0 {
		return 0
	}
	hi, lo := bits.Mul64(need, b.Window)
	lo, borrow := bits.Sub64(lo, rem, 0)
	hi -= borrow
	q, r := bits.Div64(hi, lo, b.PerWindow)
	if r != 0 {
		q++
	}
	return q
}
