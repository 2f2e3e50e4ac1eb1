package models

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
)

// TestTokenBucketTake pins the token bucket model's Decisions, which only
// redislimit's exact script is compared with field by field: 5 per second.
func TestTokenBucketTake(t *testing.T) {
	m := NewTokenBucket(5, 5, time.Second, 0)
	ms := int64(time.Millisecond)
	for i, step := range []struct {
		at   int64
		n    int
		want hotlimit.Decision
	}{
		{0, 5, hotlimit.Decision{Allowed: true, Limit: 5, ResetAfter: time.Second}},
		{400 * ms, 0, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAfter: 600 * time.Millisecond}},
		{400 * ms, 3, hotlimit.Decision{Limit: 5, Remaining: 2, RetryAfter: 200 * time.Millisecond, ResetAfter: 600 * time.Millisecond}},
		{400 * ms, 1, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 1, ResetAfter: 800 * time.Millisecond}},
		// The clock steps back 100 ms: nothing refills until it is back at
		// 400 ms, so every wait is 100 ms longer.
		{300 * ms, 2, hotlimit.Decision{Limit: 5, Remaining: 1, RetryAfter: 300 * time.Millisecond, ResetAfter: 900 * time.Millisecond}},
		{300*ms + 1, 6, hotlimit.Decision{Limit: 5, Remaining: 1, RetryAfter: hotlimit.Never, ResetAfter: 900*time.Millisecond - 1}},
		{600*ms - 1, 2, hotlimit.Decision{Limit: 5, Remaining: 1, RetryAfter: 1, ResetAfter: 600*time.Millisecond + 1}},
		{600 * ms, 2, hotlimit.Decision{Allowed: true, Limit: 5, ResetAfter: time.Second}},
		{5 * time.Hour.Nanoseconds(), -1, hotlimit.Decision{Limit: 5, Remaining: 5, RetryAfter: hotlimit.Never}},
	} {
		assert.Equal(t, step.want, m.Take("k", step.n, step.at), "step %d", i)
	}
	assert.Equal(t, 1, m.Len())
}
