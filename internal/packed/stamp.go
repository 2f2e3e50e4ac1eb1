package packed

import "math"

// Sliding log slot, per admitted request:
//
//	| timestamp, ns (63 bits, signed) | round parity (1 bit) |
//	| bits 63..1                      | bit 0                |
//
// A slot of a key's ring holds the time of one admitted request and the parity
// of the ring round that wrote it, so a reader can tell whether the slot under
// the ring's head was already claimed in the current round (the head is then
// stale) or still holds the previous round's request. Timestamps must lie in
// [MinStamp, MaxStamp], ±2^62 ns, about ±146 years from the clock's origin.
const (
	MaxStamp = math.MaxInt64>>1 - 1
	MinStamp = math.MinInt64 >> 1
	// StampDead is the tombstone of a sliding log slot, math.MaxInt64; no
	// live slot holds it, since it decodes to time MaxStamp + 1.
	StampDead = math.MaxInt64
)

// PackStamp encodes a timestamp in [MinStamp, MaxStamp] and a round's parity.
func PackStamp(t int64, round uint64) int64 {
	return t<<1 | int64(round&1)
}

// UnpackStamp decodes a slot into its timestamp and round parity.
func UnpackStamp(s int64) (t int64, parity uint64) {
	return s >> 1, uint64(s & 1)
}
