package fixedwindow

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass in the window, after
// this one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter, so it costs about what Allow costs: for callers that classify
// decisions by their remaining share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	allowed, count := l.admit(key)
	return allowed, int(l.limit - min(count, l.limit))
}
