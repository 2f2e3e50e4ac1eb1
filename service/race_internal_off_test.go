//go:build !race

package service

// raceDetector is set under the race detector; see race_internal_on_test.go.
const raceDetector = false
