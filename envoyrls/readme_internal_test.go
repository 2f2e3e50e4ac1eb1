package envoyrls

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMENumbersAreThePackages: the bounds README.md's hotlimitd section
// gives in prose that this package enforces (a configuration file's size,
// /json's body, the distinct limit overrides kept, the near-limit ratio of
// the reference's stats) are its constants.
func TestREADMENumbersAreThePackages(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(md)), " ") // prose wraps anywhere
	for _, c := range []struct {
		re, want string
	}{
		{"\\(`\\*\\.yaml`, `\\*\\.yml`, each at most (\\d+) MiB", strconv.Itoa(maxFileSize >> 20)},
		{"413 for a body over (\\d+) MiB", strconv.Itoa(maxJSONBody >> 20)},
		{"past (\\d+) distinct limits of this kind", strconv.Itoa(maxOverrides)},
		{"`near_limit` the hits past (\\d+)% of the limit", strconv.Itoa(int(math.Round(float64(nearLimitRatio) * 100)))},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(text)
		if assert.NotNil(t, m, "README.md says %s", c.re) {
			assert.Equal(t, c.want, m[1], "README.md: %s", c.re)
		}
	}
}

// TestREADMECountsTheReferenceComparisons: README.md's "Proof" gives how
// many configuration directories TestReferenceConfigLoad loads in the
// reference and in hotlimitd; the count it gives is refConfigCases', within
// a tenth, as it says "some".
func TestREADMECountsTheReferenceComparisons(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(md)), " ")
	m := regexp.MustCompile("`TestReferenceConfigLoad` loads some (\\d+) configuration directories").FindStringSubmatch(text)
	require.NotNil(t, m, "README.md counts TestReferenceConfigLoad's configurations")
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.InEpsilon(t, len(refConfigCases), n, 0.1, "TestReferenceConfigLoad's cases")
}
