package slidingcounter

// Sliding counter word, per key:
//
//	| window index, mod 2^30 (30 bits) | prev count (17 bits) | cur count (17 bits) |
//	| bits 63..34                      | bits 33..17          | bits 16..0          |
//
// The window index is ⌊now/Window⌋ (floored, so windows are aligned on the
// clock's origin) of the window cur belongs to, kept modulo 2^30; prev is how
// many requests the window before it (index − 1) admitted and cur how many the
// indexed window admitted so far. Both counts lie in [0, MaxLimit]. The
// all-ones word, whose cur is all ones (2^17 − 1 > MaxLimit), is never live: it
// is the tombstone of an evicted key, dead.
//
// Wrap-around: the distance from the stored index to the clock's, mod 2^30, is
// read as forward when below 2^29 windows (the same window, the next one, or a
// later one: see advance) and as the clock having stepped back when at or
// above it. 2^29 windows of 1 ms are about 6.2 days; of 1 s, 17 years.
const (
	countBits = 17
	indexBits = 64 - 2*countBits

	countMask = 1<<countBits - 1
	indexMask = 1<<indexBits - 1
	// half is the wrap-around threshold: an index distance at or above it
	// reads as backwards.
	half = 1 << (indexBits - 1)

	// dead is the tombstone Sweep swaps into an idle key's word.
	dead = ^uint64(0)
)

// Fails to compile if the three fields do not fill exactly one word.
const _ uint = 64 - (indexBits + 2*countBits)
const _ uint = (indexBits + 2*countBits) - 64

// Fails to compile if MaxLimit does not fit a count below the tombstone's, or
// is less than the 1<<16 the package promises.
const _ uint = countMask - 1 - MaxLimit
const _ uint = MaxLimit - 1<<16

// pack builds a word from a window index (kept mod 2^30) and the previous and
// current window's counts (each at most MaxLimit; higher bits are dropped).
func pack(index, prev, cur uint64) uint64 {
	return (index&indexMask)<<(2*countBits) | (prev&countMask)<<countBits | cur&countMask
}

// unpack splits a word into its window index mod 2^30 and its two counts.
func unpack(w uint64) (index, prev, cur uint64) {
	return w >> (2 * countBits), w >> countBits & countMask, w & countMask
}
