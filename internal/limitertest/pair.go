package limitertest

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// A rule of two limits, for the tests of what a rule of several limits
// reports: a token bucket that refills 10 a second and holds 20 (its
// capacity is its burst, q=20), and a window of 100 a minute (q=100).
var (
	BurstyBucket = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	MinuteWindow = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
)

// PairScript is how many requests a client sends in each second to the
// rule {BurstyBucket, MinuteWindow}: the bucket denies in second 2, the
// window's share of its capacity falls below the bucket's from second 5,
// and the window denies from second 8.
var PairScript = []int{10, 10, 25, 10, 10, 10, 10, 10, 10, 10, 10, 10}

// PairModel is the rule {BurstyBucket, MinuteWindow} written out for a
// clock that moves in whole seconds from a minute boundary: each limit's
// own state. Start it with NewPairModel.
type PairModel struct {
	tokens, count int // the bucket's tokens; the window's count
	last          int // second of the bucket's last refill
}

// NewPairModel returns the model of a key never seen: a full bucket and an
// empty window.
func NewPairModel() PairModel { return PairModel{tokens: 20} }

// PairStep is what the rule answers one request with.
type PairStep struct {
	// Allowed and RetryAfter are the rule's: all or nothing, and the wait
	// until both limits admit the request.
	Allowed    bool
	RetryAfter time.Duration
	// Decider is the limit that decides (0 the bucket, 1 the window): the
	// one that denies, or, when both pass, the one with the least share of
	// its capacity left, the bucket on a tie.
	Decider int
	// Remaining and ResetAfter are each limit's own after the request.
	Remaining  [2]int
	ResetAfter [2]time.Duration
}

// Take asks the rule for one request at second sec.
func (m *PairModel) Take(sec int) PairStep {
	m.tokens = min(20, m.tokens+10*(sec-m.last))
	m.last = sec
	untilMinute := time.Duration(60-sec%60) * time.Second
	var s PairStep
	switch {
	case m.tokens < 1: // the bucket is asked first and denies
		s.Decider, s.RetryAfter = 0, 100*time.Millisecond
		if m.count >= 100 { // and the window would deny it too: its wait
			s.RetryAfter = max(s.RetryAfter, untilMinute)
		}
	case m.count >= 100: // the window denies; the bucket's token is given back
		s.Decider, s.RetryAfter = 1, untilMinute
	default:
		s.Allowed = true
		m.tokens--
		m.count++
		// window/100 < bucket/20: the window has the least share left.
		if (100-m.count)*20 < m.tokens*100 {
			s.Decider = 1
		}
	}
	s.Remaining = [2]int{m.tokens, 100 - m.count}
	s.ResetAfter[0] = time.Duration(20-m.tokens) * 100 * time.Millisecond
	if m.count > 0 {
		s.ResetAfter[1] = untilMinute
	}
	return s
}

// PolicyItem and LimitItem match one RateLimit-Policy item and one
// RateLimit item, as httplimit writes them in headers and grpclimit in
// metadata: the quoted policy name, then q and w, or r and t.
var (
	PolicyItem = regexp.MustCompile(`^("[^"]*");q=(\d+);w=(\d+)$`)
	LimitItem  = regexp.MustCompile(`^("[^"]*");r=(\d+);t=(\d+)$`)
)

// CheckPairItems checks the RateLimit-Policy items policies and the
// RateLimit items limits of one response of the rule {BurstyBucket,
// MinuteWindow} against the model's step s: both limits listed, the
// deciding one first, each item pair naming one policy (names holds the
// bucket's and the window's quoted names) with that limit's own q, r and t
// (seconds, rounded up). where prefixes every failure.
func CheckPairItems(t testing.TB, policies, limits []string, names [2]string, s PairStep, where string) {
	t.Helper()
	quota := [2]string{"20", "100"}
	require.Len(t, policies, 2, "%s: every limit of the rule", where)
	require.Len(t, limits, 2, "%s: every limit of the rule", where)
	for k, j := range [2]int{s.Decider, 1 - s.Decider} {
		at := fmt.Sprintf("%s item %d", where, k)
		pol := PolicyItem.FindStringSubmatch(policies[k])
		lim := LimitItem.FindStringSubmatch(limits[k])
		require.NotNil(t, pol, "%s: %q", at, policies[k])
		require.NotNil(t, lim, "%s: %q", at, limits[k])
		assert.Equal(t, names[j], pol[1], "%s: the deciding policy first", at)
		assert.Equal(t, pol[1], lim[1], "%s: both items name one policy", at)
		assert.Equal(t, quota[j], pol[2], "%s: q", at)
		assert.Equal(t, strconv.Itoa(s.Remaining[j]), lim[2], "%s: r is the policy's own", at)
		assert.Equal(t, strconv.FormatInt(int64((s.ResetAfter[j]+time.Second-1)/time.Second), 10), lim[3],
			"%s: t is the policy's own", at)
	}
}
