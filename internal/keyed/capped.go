package keyed

import (
	"time"

	"github.com/hotlimit/hotlimit"
)

// Capped is the decision for a new key that hotlimit.WithMaxKeys turns away,
// of a limiter of the given limit, retry being when every key held now is
// idle if it gets no more requests (hotlimit.Never when never). Nothing of
// the key is held, so its quota is whole once there is room for it: its
// ResetAfter is that same time, so that a client reading the reset (an
// HTTP RateLimit field's t, Envoy's duration_until_reset) waits as long as
// one reading RetryAfter, rather than coming back at once to be turned
// away again.
func Capped(limit int, retry time.Duration) hotlimit.Decision {
	return hotlimit.Decision{Limit: limit, RetryAfter: retry, ResetAfter: retry}
}
