package limitertest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
)

// PassesAtRetryAfter asserts that the request take makes, denied with d at
// now, is exactly d.RetryAfter away: 1 ns sooner it is denied again, told
// to wait 1 ns, and at d.RetryAfter it passes. It moves now there.
func PassesAtRetryAfter(t *testing.T, now *atomic.Int64, d hotlimit.Decision, take func() hotlimit.Decision) {
	t.Helper()
	denied := now.Load()
	now.Store(denied + int64(d.RetryAfter) - 1)
	early := take()
	assert.False(t, early.Allowed, "1 ns before RetryAfter")
	assert.Equal(t, time.Nanosecond, early.RetryAfter, "1 ns before RetryAfter")
	now.Store(denied + int64(d.RetryAfter))
	assert.True(t, take().Allowed, "at RetryAfter")
}
