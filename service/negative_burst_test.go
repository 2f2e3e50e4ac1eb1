package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestNewRejectsANegativeBurst: a negative hotlimit.WithBurst is refused by
// New whatever the rules hold, with one error that says what is wrong:
// not only once a token bucket of no burst of its own is built (a rule
// that a later Replace brings), nor as "Unlimited takes no burst" or "no
// burst other than its limit" of an allow-listed or fixed-window default,
// which a positive burst does not trouble.
func TestNewRejectsANegativeBurst(t *testing.T) {
	for _, def := range []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second},
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 3},
		{Algorithm: hotlimit.Unlimited},
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second},
	} {
		_, err := service.New(def, hotlimit.WithBurst(5))
		require.NoError(t, err, "%v", def)
		_, err = service.New(def, hotlimit.WithBurst(-1))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", def)
		assert.ErrorContains(t, err, "service: burst -1 must not be negative (hotlimit.WithBurst; 0 leaves each limit its own)", "%v", def)
	}
}
