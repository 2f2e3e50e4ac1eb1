package packed

import "math"

// Sliding log slot, per logged request:
//
//	| timestamp, ns (62 bits, signed) | refunded (1 bit) | round parity (1 bit) |
//	| bits 63..2                      | bit 1            | bit 0                |
//
// A slot of a key's ring holds the time of one logged request and the parity
// of the ring round that wrote it, so a reader can tell whether the slot under
// the ring's head was already claimed in the current round (the head is then
// stale) or still holds the previous round's request. The refunded bit marks
// a request given back: it no longer counts, whatever its time. Timestamps
// must lie in [MinStamp, MaxStamp], ±2^61 ns, about ±73 years from the
// sliding log's epoch (its clock reading at New).
const (
	// MaxStamp is the latest time, 2^61 − 2 ns: one below the time
	// StampDead decodes to, so that no live stamp, refunded or not, of
	// either parity packs to the tombstone.
	MaxStamp = math.MaxInt64>>2 - 1
	// MinStamp is the earliest time, −2^61 ns.
	MinStamp = math.MinInt64 >> 2
	// StampDead is the tombstone of a sliding log slot, math.MaxInt64; no
	// live slot holds it, since it decodes to time MaxStamp + 1.
	StampDead = math.MaxInt64
)

// PackStamp encodes a timestamp in [MinStamp, MaxStamp] and a round's parity,
// not refunded.
func PackStamp(t int64, round uint64) int64 {
	return t<<2 | int64(round&1)
}

// UnpackStamp decodes a slot into its timestamp and round parity.
func UnpackStamp(s int64) (t int64, parity uint64) {
	return s >> 2, uint64(s & 1)
}

// Refunded returns stamp s marked as refunded.
func Refunded(s int64) int64 {
	return s | 2
}

// IsRefunded reports whether stamp s is marked as refunded.
func IsRefunded(s int64) bool {
	return s&2 != 0
}
