//go:build !race

package limitertest

// raceEnabled is set under the race detector, which slows the floods tenfold.
const raceEnabled = false
