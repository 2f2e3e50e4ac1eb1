package httplimit

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEPathBoundIsThePackages: the length past which README.md's HTTP
// section says a path is keyed by its first bytes and its digest is the one
// the path fallback uses.
func TestREADMEPathBoundIsThePackages(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(md)), " ")
	m := regexp.MustCompile(`a path past (\d+) bytes is keyed by its first (\d+) bytes and its digest`).FindStringSubmatch(text)
	require.NotNil(t, m, "README.md says how long a path is kept")
	assert.Equal(t, strconv.Itoa(maxPathKey), m[1])
	assert.Equal(t, strconv.Itoa(maxPathKey), m[2])
}
