package httplimit

import (
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestREADMEPathBoundIsThePackages: the length past which README.md's HTTP
// section says a path is keyed by its first bytes and its digest is the one
// the path fallback uses.
func TestREADMEPathBoundIsThePackages(t *testing.T) {
	readmecheck.CheckClaims(t, readmecheck.Prose(t, "../README.md", "HTTP middleware"),
		readmecheck.Claim{Pattern: `a path past (\d+) bytes is keyed by its first \d+ bytes and its digest`, Want: strconv.Itoa(maxPathKey)},
		readmecheck.Claim{Pattern: `a path past \d+ bytes is keyed by its first (\d+) bytes and its digest`, Want: strconv.Itoa(maxPathKey)})
}
