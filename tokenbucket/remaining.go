package tokenbucket

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass right now, after this
// one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter, so it costs about what Allow costs: for callers that classify
// decisions by their remaining share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	allowed, tokens := l.admit(key)
	return allowed, int(tokens >> l.b.FracBits)
}
