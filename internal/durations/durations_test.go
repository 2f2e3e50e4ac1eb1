package durations

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOverflows(t *testing.T) {
	for _, s := range []string{"87600000h", "2562048h", "-2562048h", "+2562048h", "9223372036854775808ns",
		"2562047h47m16.854775808s", "9999999999999999999s", "1h9223372036854775807ns", "106751992d"[:0] + "153722868m"} {
		assert.True(t, Overflows(s), s)
	}
	for _, s := range []string{"", "0", "1s", "2562047h47m16.854775807s", "-9223372036854775808ns", "1x", "h", ".", ".s",
		"1.h.", "1e3s", "--1s", "1s ", " 1s", "1d", "87600000", "87600000x", "-", "+", "1ss"} {
		assert.False(t, Overflows(s), s)
	}
	assert.Equal(t, "2562047h47m16.854775807s", Longest)
}

func TestBeyond(t *testing.T) {
	assert.Equal(t, "longer than a Go duration holds, 2562047h47m16.854775807s", Beyond("87600000h"))
	assert.Equal(t, "longer than a Go duration holds, 2562047h47m16.854775807s", Beyond("+87600000h"))
	assert.Equal(t, "negative, and below the least Go duration, -2562047h47m16.854775808s", Beyond("-87600000h"))
}
