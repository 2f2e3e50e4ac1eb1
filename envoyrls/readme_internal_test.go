package envoyrls

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMENumbersAreThePackages: the bounds README.md's hotlimitd section
// gives in prose that this package enforces (a configuration file's size,
// /json's body, the distinct limit overrides kept, the near-limit ratio of
// the reference's stats) are its constants.
func TestREADMENumbersAreThePackages(t *testing.T) {
	readmecheck.CheckClaims(t, readmecheck.Prose(t, "../README.md", ""),
		readmecheck.Claim{Pattern: "\\(`\\*\\.yaml`, `\\*\\.yml`, each at most (\\d+) MiB", Want: strconv.Itoa(maxFileSize >> 20)},
		readmecheck.Claim{Pattern: "413 for a body over (\\d+) MiB", Want: strconv.Itoa(maxJSONBody >> 20)},
		readmecheck.Claim{Pattern: "past (\\d+) distinct limits of this kind", Want: strconv.Itoa(maxOverrides)},
		readmecheck.Claim{Pattern: "`near_limit` the hits past (\\d+)% of the limit", Want: strconv.Itoa(int(math.Round(float64(nearLimitRatio) * 100)))})
}

// TestREADMECountsTheReferenceComparisons: README.md's "Proof" gives how
// many configuration directories TestReferenceConfigLoad loads in the
// reference and in hotlimitd; the count it gives is refConfigCases', within
// a tenth, as it says "some".
func TestREADMECountsTheReferenceComparisons(t *testing.T) {
	text := readmecheck.Prose(t, "../README.md", "")
	m := regexp.MustCompile("`TestReferenceConfigLoad` loads some (\\d+) configuration directories").FindStringSubmatch(text)
	require.NotNil(t, m, "README.md counts TestReferenceConfigLoad's configurations")
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.InEpsilon(t, len(refConfigCases), n, 0.1, "TestReferenceConfigLoad's cases")
}
