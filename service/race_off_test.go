//go:build !race

package service_test

// raceEnabled shrinks the tests whose size only measures memory: the race
// detector multiplies their cost without checking more.
const raceEnabled = false
