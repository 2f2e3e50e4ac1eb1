package redislimit_test

import "testing"

// TestWalkClockStaysInRange: the differential test's clock walk turns back
// at an end of [lo, hi], and a step as large as the range or larger (two
// windows of nearly 2^50 ns against a range of 2^51) stops at the end it
// would pass once turned, rather than leave the range, where the test would
// compare the script and the model at a reading it does not allow.
func TestWalkClockStaysInRange(t *testing.T) {
	const w = int64(1) << 50
	for i, tc := range []struct{ lo, hi, now, s, want int64 }{
		{0, 10, 5, 3, 8},    // within the range
		{0, 10, 5, -3, 2},   // within the range, backwards
		{0, 10, 8, 5, 3},    // past hi: turned back
		{0, 10, 2, -5, 7},   // before lo: turned forward
		{0, 10, 10, 0, 10},  // at an end, no step
		{0, 10, 8, 2, 10},   // onto hi
		{0, 10, 8, 20, 0},   // past hi, and past lo once turned: stops at lo
		{0, 10, 2, -20, 10}, // before lo, and past hi once turned: stops at hi
		{0, 10, 5, 10, 0},   // a step of the range, turned
		{-10, 10, -3, 30, -10},
		{0, 2 * w, w / 2, 2*w - 1, 0}, // two windows of nearly 2^50, past hi then lo
		{0, 2 * w, 3 * w / 2, -(2*w - 1), 2 * w},
		{-2 * w, 2 * w, 2 * w, 4*w + 1, -2 * w},
	} {
		got := walkClock(tc.lo, tc.hi, tc.now, tc.s)
		if got != tc.want || got < tc.lo || got > tc.hi {
			t.Errorf("row %d: walkClock(%d, %d, %d, %d) = %d, want %d in [lo, hi]", i, tc.lo, tc.hi, tc.now, tc.s, got, tc.want)
		}
	}
}
