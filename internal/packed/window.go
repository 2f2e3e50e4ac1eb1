package packed

import (
	"math"
	"math/bits"
)

// Fixed window word, per key:
//
//	| window index, mod 2^42 (42 bits)  | count (22 bits) |
//	| bits 63..22                       | bits 21..0      |
//
// The window index is ⌊now/Window⌋ (floored, so windows are aligned on the
// clock's origin), kept modulo 2^42; the count is how many requests passed in
// that window, at most MaxWindowLimit. The all-ones count is never a count and
// marks a dead (evicted) word, [WindowDead].
//
// Wrap-around: an index distance below 2^41 windows reads as forward (a new
// window starts at count 0), one at or above it as a clock that stepped back
// (the stored, newer window keeps counting). 2^41 windows of 1 ms are about 70
// years.
const (
	WindowCountBits = 22
	WindowIndexBits = 64 - WindowCountBits
	// MaxWindowLimit is the largest limit a fixed window word can count to.
	MaxWindowLimit = 1<<WindowCountBits - 2
	// WindowDead is the tombstone of a fixed window word.
	WindowDead = ^uint64(0)

	windowCountMask = 1<<WindowCountBits - 1
	windowIndexMask = 1<<WindowIndexBits - 1
)

// Fails to compile if the two fields do not fill exactly one word.
const _ uint = 64 - (WindowCountBits + WindowIndexBits)
const _ uint = (WindowCountBits + WindowIndexBits) - 64

// PackWindow builds a word from a window index (kept mod 2^42) and a count
// (at most MaxWindowLimit).
func PackWindow(index, count uint64) uint64 {
	return (index&windowIndexMask)<<WindowCountBits | count&windowCountMask
}

// UnpackWindow splits a word into its window index mod 2^42 and its count.
func UnpackWindow(w uint64) (index, count uint64) {
	return w >> WindowCountBits, w & windowCountMask
}

// WindowIndex returns ⌊now/window⌋, floored for negative now, for window > 0.
func WindowIndex(now, window int64) int64 {
	q := now / window
	if now%window < 0 {
		q--
	}
	return q
}

// Window returns the window of now, cur = ⌊now/window⌋ (floored, as an
// unsigned index mod 2^64), and rem = now − cur·window in [0, window), exact
// in arithmetic mod 2^64 since its true value is in range, for window in
// (0, math.MaxInt64].
//
// Caching the current window to skip the division was measured and dropped:
// the division costs about 2 ns, and with a cheap clock the cache's check and
// the lost inlining cost more than it saves.
func Window(now int64, window uint64) (cur, rem uint64) {
	q := WindowIndex(now, int64(window))
	return uint64(q), uint64(now) - uint64(q)*window
}

// CountedAt returns the time requests decided at now, rem nanoseconds into
// its window of window nanoseconds (rem in [0, window)), count at, when the
// window they count in lies behind windows after now's (a clock that stepped
// back): now when behind is 0, else that window's start, saturated at
// math.MaxInt64 when it lies past every reading (a window index that wrapped
// around reads as one further still). The start is now + (behind·window −
// rem), counted from now itself in uint64: now's own window can start
// before math.MinInt64 (the first window of the clock's range), where
// now − rem wraps, and the start can lie more than math.MaxInt64 after now
// (a clock stepped back from near one end of int64 to near the other),
// where the difference overflows an int64.
func CountedAt(now int64, rem, behind, window uint64) int64 {
	if behind == 0 {
		return now
	}
	hi, lo := bits.Mul64(behind, window)
	d := lo - rem                       // behind·window − rem when hi == 0: lo ≥ window > rem
	room := math.MaxInt64 - uint64(now) // math.MaxInt64 − now, in [0, 2^64)
	if hi != 0 || d > room {
		return math.MaxInt64
	}
	return int64(uint64(now) + d)
}

// Advance returns the window and count that a request at window index now
// counts against, given a stored index and count: a later window starts at
// zero; the same or an earlier one (a clock that stepped back) keeps the
// stored window and count. The second result is how many windows now is
// behind the returned index (0 unless the clock stepped back).
func Advance(index, count, now uint64) (uint64, uint64, uint64) {
	ahead := (now - index) & windowIndexMask
	switch {
	case ahead == 0:
		return index, count, 0
	case ahead < 1<<(WindowIndexBits-1):
		return now & windowIndexMask, 0, 0
	default:
		return index, count, (index - now) & windowIndexMask
	}
}
