package tokenbucket

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGuardSpans: the guard's spans are, as guard.go defines them, back =
// R/4, hard = 3R/4 − fill − m with m = ⌈window/perWindow⌉ (one unit of time
// rounded up to the nanosecond), and soft = min(R/4, hard/2): hard/2 where
// the fill time takes most of R/4, R/4 otherwise. R is a multiple of 4 here,
// so that 3·(R/4) is 3R/4.
func TestGuardSpans(t *testing.T) {
	for _, c := range []struct {
		rng, fill, window, perWindow uint64
		soft, hard, back             int64
	}{
		// m = ⌈9/3⌉ = 3: hard = 3000 − 1000 − 3, soft = hard/2 < R/4.
		{4000, 1000, 9, 3, 998, 1997, 1000},
		// m = ⌈10/3⌉ = 4: hard = 3000 − 1000 − 4.
		{4000, 1000, 10, 3, 998, 1996, 1000},
		// m = ⌈1/1000⌉ = 1: hard = 3000 − 100 − 1, soft = R/4 < hard/2.
		{4000, 100, 1, 1000, 1000, 2899, 1000},
		// m = 1000/1000 = 1 exactly.
		{4000, 100, 1000, 1000, 1000, 2899, 1000},
	} {
		soft, hard, back := guardSpans(c.rng, c.fill, c.window, c.perWindow)
		assert.Equal(t, c.soft, soft, "soft of %+v", c)
		assert.Equal(t, c.hard, hard, "hard of %+v", c)
		assert.Equal(t, c.back, back, "back of %+v", c)
	}
}
