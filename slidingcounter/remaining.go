package slidingcounter

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests the estimate would still pass right now,
// after this one (when denied, before it). It computes neither RetryAfter
// nor ResetAfter, so it costs about what Allow costs, plus one division for
// the estimate: for callers that classify decisions by their remaining
// share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	allowed, prev, count, e := l.admit(key)
	return allowed, l.room(l.weigh(prev, e) + count)
}

// room is decision's Remaining for the estimate est.
func (l *Limiter) room(est uint64) int {
	if est < l.limit {
		return int(l.limit - est)
	}
	return 0 // est > limit only for a clock read behind
}
