package gcra

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass right now, after this
// one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter, so it costs about what Allow costs: for callers that classify
// decisions by their remaining share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	allowed, tat, s := l.admit(key)
	return allowed, l.remaining(tat, s)
}

// remaining is decision's Remaining for the TAT tat at the limiter's time s.
func (l *Limiter) remaining(tat, s uint64) int {
	switch {
	case tat <= s:
		return int(l.burst)
	case tat-s < l.span:
		return int((l.span - (tat - s)) / l.tsc)
	}
	return 0 // a clock that went back: no tokens, none owed
}
