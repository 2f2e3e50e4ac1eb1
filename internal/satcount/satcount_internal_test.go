package satcount

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAddOnAWrappedWordUpToSmallAdd: on a word wrapped past math.MaxInt64,
// an add of at most smallAdd (2^32) is one atomic add, so it moves the word
// on by exactly n; a larger one leaves it as it is. So a wrapped word needs
// 2^31 adds to come back to zero, as smallAdd's comment says.
func TestAddOnAWrappedWordUpToSmallAdd(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("an int of 32 bits holds no add above 2^32")
	}
	var c Count
	c.n.Store(math.MinInt64)
	two32 := int64(1) << 32 // a variable: no int constant on 32 bits
	c.Add(int(two32 + 1))
	assert.EqualValues(t, int64(math.MinInt64), c.n.Load(), "an add above 2^32 moved the wrapped word")
	c.Add(int(two32))
	assert.EqualValues(t, int64(math.MinInt64)+two32, c.n.Load(), "an add of 2^32 is one atomic add")
	assert.EqualValues(t, int64(math.MaxInt64), c.Load())
}
