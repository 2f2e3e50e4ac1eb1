package transport

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIsToken: a field name is one or more visible ASCII characters other
// than the delimiters; each edge of that set is pinned, as ProxyHeader and
// Header (httplimit) and ProxyHeader and Metadata (grpclimit) read no
// header or entry for a name outside it.
func TestIsToken(t *testing.T) {
	for _, s := range []string{"x", "X-Real-IP", "x-api-key", "!", "~", "a!#$%&'*+-.^_`|~9"} {
		assert.True(t, IsToken(s), "%q", s)
	}
	no := []string{"", " ", "x y", "x\ty", "\x00", "x\x1f", "x\x7f", "x\x80", "X-API-\u212aEY", "\xff"}
	for _, c := range `"(),/:;<=>?@[\]{}` {
		no = append(no, "x"+string(c)+"y")
	}
	for _, s := range no {
		assert.False(t, IsToken(s), "%q", s)
	}
}
