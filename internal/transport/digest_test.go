package transport

import (
	"crypto/sha256"
	randv2 "math/rand/v2"
	"strings"
	"testing"

	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/stretchr/testify/assert"
)

// TestDigestIsSHA256: Digest of a string is sha256.Sum256 of its bytes, for
// the empty string, short ones and ones of several blocks.
func TestDigestIsSHA256(t *testing.T) {
	r := randv2.New(randv2.NewPCG(1, 2))
	for _, n := range []int{0, 1, 55, 56, 63, 64, 65, 1000, 1 << 16} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		assert.Equal(t, sha256.Sum256(b), Digest(string(b)), "%d bytes", n)
	}
}

// TestLongValuesAreHashedWithoutACopy: a key made of a megabyte value, by
// Digest or HeaderKeys.Key, allocates its digest's few bytes, not a copy of
// the value.
func TestLongValuesAreHashedWithoutACopy(t *testing.T) {
	value := strings.Repeat("v", 1<<20)
	keys := NewHeaderKeys("X-Api-Key")
	var key string
	var sum [sha256.Size]byte
	digest := limitertest.LeastAllocated(func() { sum = Digest(value) })
	header := limitertest.LeastAllocated(func() { key = keys.Key(value) })
	assert.Less(t, digest, uint64(4<<10), "bytes allocated by Digest of 1 MiB")
	assert.Less(t, header, uint64(4<<10), "bytes allocated by HeaderKeys.Key of 1 MiB")
	assert.Equal(t, sha256.Sum256([]byte(value)), sum)
	assert.True(t, strings.HasPrefix(key, "header-sha256:x-api-key:"), key)
}
