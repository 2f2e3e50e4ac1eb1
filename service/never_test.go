package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestSeveralLimitsNeverWhenALaterLimitCannotHoldN: n above any limit's
// capacity can never pass the rule, so its denial says RetryAfter Never,
// even when an earlier limit, short of n for now, is the one that denied:
// waiting the earlier limit's RetryAfter would only meet the later limit's
// Never. A 10/s bucket drained to 6 denies 7 requests for 100 ms; a 5/min
// window can never hold 7. In shadow mode the window denies nothing, and
// the bucket's own RetryAfter stands.
func TestSeveralLimitsNeverWhenALaterLimitCannotHoldN(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	shadow := window
	shadow.Shadow = true
	for _, tc := range []struct {
		rule  service.Limits
		never bool
	}{
		{service.Limits{bucket, window}, true},
		{service.Limits{bucket, shadow}, false},
	} {
		clock, _ := frozen(int64(time.Hour))
		s, err := service.NewFromRules(service.Rules{Default: tc.rule}, clock)
		require.NoError(t, err)
		require.True(t, s.Take("u", "a", 4).Allowed, "rule %v: the bucket keeps 6", tc.rule)
		d := s.Take("u", "a", 7)
		require.False(t, d.Allowed, "rule %v", tc.rule)
		if tc.never {
			assert.Equal(t, hotlimit.Never, d.RetryAfter, "rule %v: 7 can never pass the 5/min window", tc.rule)
			pd, _ := s.TakePolicy("u", "a", 7)
			assert.Equal(t, hotlimit.Never, pd.RetryAfter, "rule %v: TakePolicy", tc.rule)
			ed, _, err := s.TakeEach(context.Background(), "u", "a", 7, nil)
			require.NoError(t, err)
			assert.Equal(t, hotlimit.Never, ed.RetryAfter, "rule %v: TakeEach", tc.rule)
		} else {
			assert.NotEqual(t, hotlimit.Never, d.RetryAfter, "rule %v: 7 passes once the bucket refills", tc.rule)
			assert.Positive(t, d.RetryAfter, "rule %v", tc.rule)
		}
	}
}
