package envoyrls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWindowPastADuration: a rate_limit window written as a Go duration but
// longer than one holds (10,000 years as 87600000h) is an error that says so
// and names the longest, rather than one calling it no positive Go duration,
// which it is.
func TestWindowPastADuration(t *testing.T) {
	for _, window := range []string{"87600000h", "8760000h", "9223372036854775808ns"} {
		_, err := ParseDomain("w.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n      window: "+window+"\n"))
		require.Error(t, err, window)
		assert.Contains(t, err.Error(), "'"+window+"' is longer than a Go duration holds, 2562047h47m16.854775807s", window)
		assert.NotContains(t, err.Error(), "not a positive Go duration", window)
	}
	// One below the least, which a minus sign writes, is not positive.
	_, err := ParseDomain("w.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n      window: -87600000h\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'-87600000h' is not a positive Go duration")
}
