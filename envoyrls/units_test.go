package envoyrls_test

import (
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls"
)

// TestUnitDuration: how long each unit is, as the reference's divider
// counts it (a month of 30 days, a year of 365), and 0 for UNKNOWN.
func TestUnitDuration(t *testing.T) {
	day := 24 * time.Hour
	for unit, want := range map[pb.RateLimitResponse_RateLimit_Unit]time.Duration{
		pb.RateLimitResponse_RateLimit_UNKNOWN: 0,
		pb.RateLimitResponse_RateLimit_SECOND:  time.Second,
		pb.RateLimitResponse_RateLimit_MINUTE:  time.Minute,
		pb.RateLimitResponse_RateLimit_HOUR:    time.Hour,
		pb.RateLimitResponse_RateLimit_DAY:     day,
		pb.RateLimitResponse_RateLimit_WEEK:    7 * day,
		pb.RateLimitResponse_RateLimit_MONTH:   30 * day,
		pb.RateLimitResponse_RateLimit_YEAR:    365 * day,
	} {
		assert.Equal(t, want, envoyrls.UnitDuration(unit), "%v", unit)
	}
}

// TestWindowReportsItsUnit: a rule's window extension is reported as
// current_limit's unit and multiplier, the largest unit that divides it,
// and as UNKNOWN when it is no whole number of seconds, as Rule.Unit says;
// Limit.Window is the window either way.
func TestWindowReportsItsUnit(t *testing.T) {
	for _, tc := range []struct {
		window     string
		unit       pb.RateLimitResponse_RateLimit_Unit
		multiplier uint32
		d          time.Duration
	}{
		{"1s", pb.RateLimitResponse_RateLimit_SECOND, 1, time.Second},
		{"90s", pb.RateLimitResponse_RateLimit_SECOND, 90, 90 * time.Second},
		{"2h", pb.RateLimitResponse_RateLimit_HOUR, 2, 2 * time.Hour},
		{"336h", pb.RateLimitResponse_RateLimit_WEEK, 2, 14 * 24 * time.Hour},
		{"1500ms", pb.RateLimitResponse_RateLimit_UNKNOWN, 0, 1500 * time.Millisecond},
	} {
		t.Run(tc.window, func(t *testing.T) {
			d, err := envoyrls.ParseDomain("w.yaml", []byte("domain: w\ndescriptors:\n  - key: k\n    rate_limit: {window: "+tc.window+", requests_per_unit: 3}\n"))
			require.NoError(t, err)
			require.Len(t, d.Rules, 1)
			r := d.Rules[0]
			assert.Equal(t, tc.unit, r.Unit)
			assert.Equal(t, tc.multiplier, r.UnitMultiplier)
			assert.Equal(t, uint32(3), r.RequestsPerUnit)
			assert.Equal(t, tc.d, r.Limit.Window)
			assert.Equal(t, 3, r.Limit.Limit)
		})
	}
}
