// Package workload makes the key sets and key sequences of the benchmarks: n
// distinct keys, and a per-goroutine random source that draws key indices
// uniformly or Zipf-skewed in a few nanoseconds, without locks or allocations.
package workload

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Key returns the i-th key of every key set: "user-0000042". Keys of
// different indices differ; all have the same length up to 10^7 keys.
func Key(i int) string { return fmt.Sprintf("user-%07d", i) }

var (
	keysMu sync.Mutex
	keys   = map[int][]string{}
)

// Keys returns keys 0..n-1, built once per n and shared: callers must not
// modify the slice.
func Keys(n int) []string {
	keysMu.Lock()
	defer keysMu.Unlock()
	if ks, ok := keys[n]; ok {
		return ks
	}
	ks := make([]string, n)
	for i := range ks {
		ks[i] = Key(i)
	}
	keys[n] = ks
	return ks
}

// Distinct reports whether every key of ks is different from the others.
func Distinct(ks []string) bool {
	seen := make(map[string]struct{}, len(ks))
	for _, k := range ks {
		seen[k] = struct{}{}
	}
	return len(seen) == len(ks)
}

var seeds atomic.Uint64

// Rand is a splitmix64 generator: one add and a few multiplies per draw, no
// shared state. Each goroutine makes its own with [NewRand].
type Rand struct{ s uint64 }

// NewRand returns a generator seeded differently from every other one made
// in this process.
func NewRand() Rand {
	return Rand{s: seeds.Add(1) * 0x9e3779b97f4a7c15}
}

// Uint64 returns the next 64 random bits.
func (r *Rand) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Uniform returns an index in [0, n) with every index equally likely, for
// 0 < n < 2^32 (Lemire's multiply-shift reduction of 32 random bits).
func (r *Rand) Uniform(n int) int {
	return int((r.Uint64() >> 32) * uint64(n) >> 32)
}

// Zipf draws indices in [0, n) where index k has probability proportional to
// 1/(k+1)^s: index 0 is the hottest key. Draws use Vose's alias method, so a
// draw is one random number and two table loads whatever n is. A Zipf is
// read-only after NewZipf and safe to share between goroutines.
type Zipf struct {
	n int
	s float64
	p []float64 // p[k] is the probability of index k
	// col[k] packs column k of the alias table in one word, so a draw
	// touches one cache line: the high 32 bits are the cut (the column
	// yields k when the low 32 random bits are below it), the low 32 bits
	// the alias it yields otherwise.
	col []uint64
}

// NewZipf builds the alias table for n indices with exponent s > 0
// (s = 0.99 is the YCSB default; larger s is more skewed). n must be in
// [1, 2^32).
func NewZipf(n int, s float64) (*Zipf, error) {
	if n < 1 || uint64(n) >= 1<<32 || !(s > 0) {
		return nil, fmt.Errorf("workload: zipf n %d must be in [1, 2^32) and s %v positive", n, s)
	}
	z := &Zipf{n: n, s: s, p: make([]float64, n), col: make([]uint64, n)}
	sum := 0.0
	for k := range z.p {
		z.p[k] = math.Pow(float64(k+1), -s)
		sum += z.p[k]
	}
	// Vose: scale to mean 1, pair each small column with a large donor.
	scaled := make([]float64, n)
	var small, large []int
	for k := range z.p {
		z.p[k] /= sum
		scaled[k] = z.p[k] * float64(n)
		if scaled[k] < 1 {
			small = append(small, k)
		} else {
			large = append(large, k)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		z.col[s] = uint64(toCut(scaled[s]))<<32 | uint64(l)
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What remains has probability 1 up to rounding: keep itself always.
	for _, k := range append(small, large...) {
		z.col[k] = math.MaxUint32<<32 | uint64(k)
	}
	return z, nil
}

// toCut maps a keep-probability in [0, 1] to a threshold on 32 random bits.
func toCut(p float64) uint32 {
	return uint32(math.Min(math.Max(p, 0), 1) * math.MaxUint32)
}

// N returns the number of indices.
func (z *Zipf) N() int { return z.n }

// P returns the probability of index k.
func (z *Zipf) P(k int) float64 { return z.p[k] }

// Draw returns an index in [0, n) drawn with r.
func (z *Zipf) Draw(r *Rand) int {
	x := r.Uint64()
	k := (x >> 32) * uint64(z.n) >> 32
	if c := z.col[k]; uint32(x) >= uint32(c>>32) {
		return int(uint32(c))
	}
	return int(k)
}
