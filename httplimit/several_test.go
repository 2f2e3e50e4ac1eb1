package httplimit_test

import (
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// A rule of two limits: a token bucket that refills 10 a second and holds
// 20 (q=20), and a window of 100 a minute (q=100).
var (
	burstyBucket = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	minuteWindow = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
)

// pairModel is the rule {burstyBucket, minuteWindow} written out for a
// clock that moves in whole seconds from a minute boundary.
type pairModel struct {
	tokens, count, last int // the bucket's tokens and last refill (s); the window's count
}

// take asks the rule for one request at second sec: whether it passes, the
// limit that decides (0 the bucket, 1 the window), that limit's own
// Remaining and ResetAfter, and the rule's RetryAfter.
func (m *pairModel) take(sec int) (allowed bool, decider, remaining int, reset, retry time.Duration) {
	m.tokens = min(20, m.tokens+10*(sec-m.last))
	m.last = sec
	untilMinute := time.Duration(60-sec%60) * time.Second
	switch {
	case m.tokens < 1: // the bucket is asked first and denies
		allowed, decider, retry = false, 0, 100*time.Millisecond
	case m.count >= 100: // the window denies; the bucket's token is given back
		allowed, decider, retry = false, 1, untilMinute
	default:
		allowed = true
		m.tokens--
		m.count++
		// The least share of its capacity left, the bucket on a tie.
		if (100-m.count)*20 < m.tokens*100 {
			decider = 1
		}
	}
	if decider == 0 {
		return allowed, 0, m.tokens, time.Duration(20-m.tokens) * 100 * time.Millisecond, retry
	}
	return allowed, 1, 100 - m.count, untilMinute, retry
}

// pairScript is how many requests arrive in each second: the bucket denies
// in second 2, the window's share falls below the bucket's from second 5
// (while the bucket's Remaining stays the smaller), and the window denies
// from second 8.
var pairScript = []int{10, 10, 25, 10, 10, 10, 10, 10, 10, 10, 10, 10}

var (
	policyItem = regexp.MustCompile(`^("[^"]*");q=(\d+);w=(\d+)$`)
	limitItem  = regexp.MustCompile(`^("[^"]*");r=(\d+);t=(\d+)$`)
)

// TestSeveralLimitsHeadersDescribeOnePolicy: behind the middleware, a rule
// of a token bucket with a burst and a fixed window. Once the window's
// share of its quota fell below the bucket's, the window decided and
// RateLimit-Policy advertised it (q=100), but RateLimit carried the
// bucket's remaining count, the smaller, and the rule's largest reset: an
// item that described no policy. Now every response's two fields name the
// same policy, with that policy's own q, r and t, as a sequential model of
// each limit computes them, and a denial's Retry-After is the denying
// limit's wait.
func TestSeveralLimitsHeadersDescribeOnePolicy(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour)) // a minute boundary: the model's windows
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{burstyBucket, minuteWindow}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	h := httplimit.New(svc)(ok)
	names := [2]string{httplimit.PolicyName(burstyBucket), httplimit.PolicyName(minuteWindow)}
	quota := [2]string{"20", "100"}
	m := pairModel{tokens: 20}
	windowDecided := 0
	for sec, calls := range pairScript {
		now.Store(int64(time.Hour) + int64(sec)*int64(time.Second))
		for call := range calls {
			allowed, decider, remaining, reset, retry := m.take(sec)
			w := serve(h, get("/", "192.0.2.1:1"))
			if allowed {
				assert.Equal(t, http.StatusOK, w.Code, "second %d call %d", sec, call)
			} else {
				assert.Equal(t, http.StatusTooManyRequests, w.Code, "second %d call %d", sec, call)
				assert.Equal(t, strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10), w.Header().Get("Retry-After"),
					"second %d call %d", sec, call)
			}
			pol := policyItem.FindStringSubmatch(w.Header().Get("RateLimit-Policy"))
			lim := limitItem.FindStringSubmatch(w.Header().Get("RateLimit"))
			require.NotNil(t, pol, "second %d call %d: %q", sec, call, w.Header().Get("RateLimit-Policy"))
			require.NotNil(t, lim, "second %d call %d: %q", sec, call, w.Header().Get("RateLimit"))
			assert.Equal(t, `"`+names[decider]+`"`, pol[1], "second %d call %d: the deciding policy", sec, call)
			assert.Equal(t, pol[1], lim[1], "second %d call %d: both fields name one policy", sec, call)
			assert.Equal(t, quota[decider], pol[2], "second %d call %d: q", sec, call)
			assert.Equal(t, strconv.Itoa(remaining), lim[2], "second %d call %d: r is the policy's own", sec, call)
			assert.Equal(t, strconv.FormatInt(int64((reset+time.Second-1)/time.Second), 10), lim[3],
				"second %d call %d: t is the policy's own", sec, call)
			if decider == 1 && allowed {
				windowDecided++
			}
		}
	}
	assert.Positive(t, windowDecided, "the window decides some allowed requests")
}
