package tokenbucket

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestDirectClock: Allow calls hotlimit.Monotonic directly, instead of the
// limiter's clock, exactly when that clock is hotlimit.Monotonic: when no
// option sets a clock.
func TestDirectClock(t *testing.T) {
	fake := func() int64 { return 0 }
	for _, tc := range []struct {
		name string
		opts []hotlimit.Option
		want bool
	}{
		{"no options", nil, true},
		{"WithClock(nil)", []hotlimit.Option{hotlimit.WithClock(nil)}, true},
		{"a nil option and a burst", []hotlimit.Option{nil, hotlimit.WithBurst(3)}, true},
		{"WithClock", []hotlimit.Option{hotlimit.WithClock(fake)}, false},
		{"WithClock, then WithClock(nil)", []hotlimit.Option{hotlimit.WithClock(fake), hotlimit.WithClock(nil)}, false},
	} {
		lim, err := New(5, time.Second, tc.opts...)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, lim.mono, tc.name)
		isMonotonic := reflect.ValueOf(lim.clock).Pointer() == reflect.ValueOf(hotlimit.Monotonic).Pointer()
		assert.Equal(t, lim.mono, isMonotonic, "%s: the clock Allow calls directly is the limiter's", tc.name)
	}
}
