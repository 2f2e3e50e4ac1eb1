package grpclimit

import (
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit"
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

// TestDocNumbersAreThePackages: the bounds the package's doc comments give
// (go doc -all) are the ones the code uses: the length past which a value
// the client writes is kept as its digest, the method's, the forwarded
// elements read, and the smallest retry delay.
func TestDocNumbersAreThePackages(t *testing.T) {
	value, method := strconv.Itoa(transport.MaxHeaderValue), strconv.Itoa(maxMethodKey)
	least, _ := RetryDelay(hotlimit.Decision{RetryAfter: 1}) // a nanosecond's wait
	readmecheck.CheckClaims(t, readmecheck.GoDoc(t, "."),
		readmecheck.Claim{Pattern: `a metadata value or a request field past (\d+) bytes, is kept as its SHA-256`, Want: value},
		readmecheck.Claim{Pattern: `A value longer than (\d+) bytes is keyed by its SHA-256`, Want: value},
		readmecheck.Claim{Pattern: `a value longer than (\d+) bytes gives its digest's key`, Want: value},
		readmecheck.Claim{Pattern: `a key longer than (\d+) bytes is kept as its SHA-256 instead`, Want: value},
		readmecheck.Claim{Pattern: `a method past (\d+) bytes is keyed by its first \d+ bytes`, Want: method},
		readmecheck.Claim{Pattern: `a method past \d+ bytes is keyed by its first (\d+) bytes`, Want: method},
		readmecheck.Claim{Pattern: `A method longer than (\d+) bytes, which no service defines`, Want: method},
		readmecheck.Claim{Pattern: `is kept as its first (\d+) bytes, " sha256:"`, Want: method},
		readmecheck.Claim{Pattern: `a method past (\d+) bytes by its first`, Want: method},
		readmecheck.Claim{Pattern: `its for= parameters, of its last (\d+) elements`, Want: strconv.Itoa(transport.MaxForwardedElements)},
		readmecheck.Claim{Pattern: `and at least (\d+) ms, since a denial`, Want: strconv.FormatInt(least.Milliseconds(), 10)},
		readmecheck.Claim{Pattern: `rounded up to the millisecond and at least (\d+) ms \(absent`, Want: strconv.FormatInt(least.Milliseconds(), 10)})
}
