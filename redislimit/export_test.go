package redislimit

// InFlight returns the calls of l to Redis under way, for tests that wait
// for concurrent calls to queue.
func InFlight(l *Limiter) int64 { return l.inflight.Load() }

// Stopped reports whether l's batcher is stopped, so that callers run their
// scripts by themselves.
func Stopped(l *Limiter) bool {
	l.batch.mu.RLock()
	defer l.batch.mu.RUnlock()
	return l.batch.stopped
}

// RedisKey returns the Redis key of key's state.
func (l *Limiter) RedisKey(key string) string { return l.redisKey(key) }

// Queued returns the calls handed to l's batcher that no flusher has taken
// yet.
func Queued(l *Limiter) int { return len(l.batch.calls) }

// WaitRetired waits for the give-backs of l's replaced leases, and the
// auto-sweeps of its expired ones, that are under way (see retireLater and
// sweepLeasesLater); no take may start one meanwhile.
func WaitRetired(l *Limiter) { l.retiring.Wait() }

// SetBreakerClock makes now the breakers' clock, in place of
// hotlimit.Monotonic, so that a test ends a cooldown by moving it; nil
// restores the monotonic clock.
func SetBreakerClock(now func() int64) {
	if now == nil {
		breakerClock.Store(nil)
		return
	}
	breakerClock.Store(&now)
}

// SetAnswerHooks sets the hooks of the goroutine that answers a call sent
// in a batch: it calls before ahead of deciding whether the call's caller
// still waits, and, on a cluster client, left once it has told the
// breakers how the ops of a call whose caller left did; nil removes them.
// Set them before building the limiter, and remove them once the limiter
// is closed.
func SetAnswerHooks(before, left func()) { answerHook, leftHook = before, left }

// ClockRange is the largest clock reading, either way, the scripts take.
const ClockRange = clockRange

// LeaseLeft returns what key's lease in l has left unspent, 0 when it has
// none (or it is retired).
func LeaseLeft(l *Limiter, key string) int64 {
	if l.leases == nil {
		return 0
	}
	ls, ok := l.leases.Load(key)
	if !ok {
		return 0
	}
	return max(ls.left.Load(), 0)
}

// SetSweptHook makes every auto-sweep of the leases call hook once it has
// ended the expired ones, before it sets the threshold of the next; nil
// removes it. Set it before building the limiter, and remove it once the
// limiter is closed.
func SetSweptHook(hook func()) { sweptHook = hook }

// SetSweepHook makes every auto-sweep of the leases call hook before it
// looks for the expired ones; nil removes it. Set it before building the
// limiter, and remove it once the limiter is closed.
func SetSweepHook(hook func()) { sweepHook = hook }

// EndLeaseTwice takes key's lease out of l's map twice, as two sweeps that
// both saw it do, and reports whether it had one.
func EndLeaseTwice(l *Limiter, key string) bool {
	ls, ok := l.leases.Load(key)
	if !ok {
		return false
	}
	l.unmap(key, ls)
	l.unmap(key, ls)
	return true
}

// ScriptHashes returns the SHA-1 of every algorithm's script, as Redis
// names them in SCRIPT EXISTS.
func ScriptHashes() []string {
	var out []string
	for _, s := range scripts {
		out = append(out, s.Hash())
	}
	return out
}
