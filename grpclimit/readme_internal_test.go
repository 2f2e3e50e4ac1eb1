package grpclimit

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/transport"
)

// TestREADMEKeyBoundsAreThePackages: the lengths past which README.md's gRPC
// section says a key is kept as a digest (a metadata value or a request
// field) or as a prefix and a digest (a method) are the ones the key
// functions use.
func TestREADMEKeyBoundsAreThePackages(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := string(md)
	start := strings.Index(text, "## gRPC")
	require.GreaterOrEqual(t, start, 0)
	text = text[start+2:]
	text = strings.Join(strings.Fields(text[:strings.Index(text, "\n## ")]), " ")
	for _, c := range []struct {
		re, want string
	}{
		{`a metadata value or a request field past (\d+) bytes is keyed by its digest`, strconv.Itoa(transport.MaxHeaderValue)},
		{`and a method by its first (\d+) bytes and its digest`, strconv.Itoa(maxMethodKey)},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(text)
		if assert.NotNil(t, m, "README.md says %s", c.re) {
			assert.Equal(t, c.want, m[1], "README.md: %s", c.re)
		}
	}
}
