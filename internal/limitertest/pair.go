package limitertest

import (
	"time"

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
	// Allowed and RetryAfter are the rule's: all or nothing.
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
