package envoyrls_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/envoyrls"
)

// TestNewRejectsANegativeDefaultBurst: a negative hotlimit.WithBurst among
// WithLimiterOptions is refused by New whatever the rules hold, saying it
// is negative, as hotlimitd's -default-burst is: not as a burst a fixed
// window (the default algorithm) does not take, which a positive one does
// not trouble, nor let by while every token bucket sets its own, until a
// Reload brings one that does not.
func TestNewRejectsANegativeDefaultBurst(t *testing.T) {
	for _, rl := range []string{
		"{unit: second, requests_per_unit: 5}",
		"{unit: second, requests_per_unit: 5, algorithm: TokenBucket}",
		"{unit: second, requests_per_unit: 5, algorithm: TokenBucket, burst: 3}",
	} {
		cfg := exampleConfig("cards.yaml", "domain: cards\ndescriptors:\n  - key: network\n    rate_limit: "+rl+"\n")
		srv, err := envoyrls.New(cfg, envoyrls.WithLimiterOptions(hotlimit.WithBurst(5)))
		require.NoError(t, err, rl)
		require.NoError(t, srv.Close())
		_, err = envoyrls.New(cfg, envoyrls.WithLimiterOptions(hotlimit.WithBurst(-1)))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, rl)
		assert.ErrorContains(t, err, "burst -1 must not be negative", rl)
	}
}
