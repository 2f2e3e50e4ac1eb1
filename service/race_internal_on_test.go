//go:build race

package service

// raceDetector is set under the race detector, whose sync.Pool drops a
// share of the buffers put back on purpose, so that a decision that takes
// its key buffer from the pool may allocate one.
const raceDetector = true
