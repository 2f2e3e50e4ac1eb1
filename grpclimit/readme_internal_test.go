package grpclimit

import (
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
	"github.com/hotlimit/hotlimit/internal/transport"
)

// TestREADMEKeyBoundsAreThePackages: the lengths past which README.md's gRPC
// section says a key is kept as a digest (a metadata value or a request
// field) or as a prefix and a digest (a method) are the ones the key
// functions use.
func TestREADMEKeyBoundsAreThePackages(t *testing.T) {
	readmecheck.CheckClaims(t, readmecheck.Prose(t, "../README.md", "gRPC"),
		readmecheck.Claim{Pattern: `a metadata value or a request field past (\d+) bytes is keyed by its digest`, Want: strconv.Itoa(transport.MaxHeaderValue)},
		readmecheck.Claim{Pattern: `and a method by its first (\d+) bytes and its digest`, Want: strconv.Itoa(maxMethodKey)})
}
