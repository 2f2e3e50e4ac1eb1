package redislimit

// InFlight returns the calls of l to Redis under way, for tests that wait
// for concurrent calls to queue.
func InFlight(l *Limiter) int64 { return l.inflight.Load() }
