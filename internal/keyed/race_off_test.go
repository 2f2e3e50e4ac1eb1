//go:build !race

package keyed

// raceEnabled is set under the race detector, which slows a flood of
// millions of keys on one goroutine tenfold.
const raceEnabled = false
