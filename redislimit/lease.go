package redislimit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
)

// lease is a batch of requests that Redis took for one key and that this
// process spends without a round trip; see WithLease.
type lease struct {
	// left is the unspent requests while the lease is live, -1 once it is
	// retired: it only decreases, and nothing is spent once it is negative.
	left atomic.Int64
	// at is the Redis time, in ticks, of the take that granted it: what a
	// give-back of its requests refers to.
	at int64
	// expires is when it ends, in ticks of Limiter.localNow.
	expires int64
	// full is when the key is back to its full quota if nothing else is
	// taken, in ticks of Limiter.localNow: spending the lease does not move
	// it, as Redis counted every leased request when it granted them.
	full int64
}

// spendLease takes n requests from key's live lease, if it has them.
func (l *Limiter) spendLease(key string, n int) (hotlimit.Decision, hotlimit.Receipt, bool) {
	ls, ok := l.leases.Load(key)
	if !ok {
		return hotlimit.Decision{}, hotlimit.Receipt{}, false
	}
	now := l.localNow()
	if now >= ls.expires {
		return hotlimit.Decision{}, hotlimit.Receipt{}, false
	}
	// Invariant: left never goes below zero by a spend, so no more is spent
	// than Redis took for the lease. The CAS takes n only from the value
	// it read to cover n; a concurrent spender that got there first changes
	// left, and this CAS fails and re-reads. retireTo, and reclaimExpired
	// for the call that carries an expired lease's leftovers, swap in -1,
	// which no spend can cover, so once the leftover is on its way back to
	// Redis no spender can also take it: each request is spent once or
	// given back once.
	for {
		v := ls.left.Load()
		if v < int64(n) {
			return hotlimit.Decision{}, hotlimit.Receipt{}, false
		}
		if ls.left.CompareAndSwap(v, v-int64(n)) {
			d := hotlimit.Decision{Allowed: true, Limit: l.c.Limit, Remaining: int(v) - n, ResetAfter: l.ticks(max(ls.full-now, 0))}
			return d, hotlimit.Receipt{N: n, At: ls.at * int64(l.unit)}, true
		}
	}
}

// leaseLeft returns what ls, a key's lease, has left to spend: 0 once it
// has expired or is retired.
func (l *Limiter) leaseLeft(ls *lease) int64 {
	if l.localNow() >= ls.expires {
		return 0
	}
	return max(ls.left.Load(), 0)
}

// reclaimExpired retires key's lease when it has expired with requests
// unspent, and returns them and the time Redis took them, for the call
// about to ask Redis for key to give back before it takes (see decide): 0
// when key has no such lease, or ctx has ended, so that the call would not
// be sent. The expired lease stays in the map, retired, until a sweep or
// the key's next lease takes it out; it counts nothing.
//
// retireTo's Swap takes the leftovers out of the lease in one step, as
// here: of the calls, sweeps and Close that find the lease expired at once,
// exactly one gets them, and the others 0 or -1 (spent, or retired by
// another), so the leftovers are given back once; and a spender that read
// the clock before the lease expired either took its requests before the
// Swap, and they are not in it, or finds -1 and takes none.
func (l *Limiter) reclaimExpired(ctx context.Context, key string) (left, at int64) {
	if l.leases == nil || ended(ctx) {
		return 0, 0
	}
	ls, ok := l.leases.Load(key)
	if !ok || l.localNow() < ls.expires || ls.left.Load() <= 0 {
		return 0, 0
	}
	if left = ls.left.Swap(-1); left <= 0 {
		return 0, 0
	}
	return left, ls.at
}

// claimLease reports whether this call, which key's lease did not cover, is
// the one to take key's next lease from Redis: one call per key at a time
// does, and the others that miss meanwhile ask for their own requests only.
// Were every concurrent miss to lease a batch, an instance would hold up to
// size per waiting caller out of the other instances' reach, not size. The
// caller releases the claim, with claims.Delete, once its lease is installed
// and the one it replaced given back (see grantLease): were a next claim
// let in while that give-back is under way, a Redis slow to take the
// give-backs would let the replaced leases pile up, each held out of the
// other instances' reach, past the twice size that WithLease allows.
func (l *Limiter) claimLease(key string) bool {
	_, loaded := l.claims.LoadOrStore(key, struct{}{})
	return !loaded
}

// grantLease installs the got requests that rep took beyond the request as
// key's lease, retiring the lease it replaces. sent is localNow before the
// script ran, so the lease ends no later than ttl after Redis took it, and
// a fixed window's lease no later than its window. The caller holds key's
// claim (see claimLease); grantLease reports whether it handed the claim
// on to the give-back of the replaced lease, which releases it when done,
// rather than leave the caller to release it.
func (l *Limiter) grantLease(ctx context.Context, key, redisKey string, rep reply, sent int64) (handed bool) {
	ttl := int64(l.set.leaseTTL / l.unit)
	expires, full := after(sent, ttl), sent+rep.reset
	if l.clock != nil {
		// rep.now is the script's reading, on the clock the lease expires
		// by (a fixed window's, that reading or the start of the key's
		// later window that counted the lease), and rep.reset runs from
		// the reading: the lease ends no later than ttl after it, and a
		// bucket is full at their sum, even if the clock stepped between
		// sent and that reading.
		expires = min(expires, after(rep.now, ttl))
		if l.c.Algorithm != hotlimit.FixedWindow {
			full = rep.now + rep.reset
		}
	}
	if l.c.Algorithm == hotlimit.FixedWindow {
		expires = min(expires, after(sent, rep.reset))
		if l.clock != nil {
			// rep.now is in the window Redis counted the lease in, read
			// on the clock the lease expires by: the lease ends with it,
			// and the key's count with it, even if the clock stepped
			// between sent and the script's reading (back: Redis then
			// counts in the key's later window, and rep.reset runs from
			// the earlier reading to that window's end, past it from
			// sent; forward: rep.reset runs from the later reading, short
			// of it from sent).
			end := windowEnd(rep.now, l.window)
			expires, full = min(expires, end), end
		}
	}
	ls := &lease{at: rep.now, expires: expires, full: full}
	ls.left.Store(rep.got)
	// The give-backs below are the limiter's, not the caller's: they run
	// even when the caller's context has ended since Redis's answer, which
	// would otherwise leave prev's unspent requests taken (retireTo has
	// swapped them out of prev already). The limiter's timeout, when set,
	// bounds them.
	ctx = context.WithoutCancel(ctx)
	if prev, loaded := l.leases.LoadAndStore(key, ls); loaded {
		handed = l.retireLater(ctx, key, redisKey, prev)
	} else {
		l.sweepLeasesLater() // a new key: the map grew
	}
	// A Close under way may have ranged over the leases before ls was
	// stored. It sets closed before it ranges, and ls is stored before
	// closed is read here, so either this read sees closed or Close's
	// Range sees ls (or both: retireTo's Swap gives the requests back
	// once).
	if l.closed.Load() {
		l.unmap(key, ls)
		_ = l.retireTo(ctx, redisKey, ls)
	}
	return handed
}

// retireLater gives back the unspent requests of ls, a lease replaced in
// the map, on a goroutine of its own: the caller whose take replaced it
// has its decision, and must not wait past its context's deadline for a
// give-back that is the limiter's. Close waits for these goroutines; once
// it has begun, ls is given back at once, on the caller's goroutine. It
// reports whether the goroutine took over key's claim, which it releases
// once the give-back is done (the timeout of WithTimeout bounds it).
func (l *Limiter) retireLater(ctx context.Context, key, redisKey string, ls *lease) bool {
	if ls.left.Load() <= 0 {
		return false // spent or retired: left never grows, nothing to give back
	}
	l.retireMu.Lock()
	if l.retireStopped {
		l.retireMu.Unlock()
		_ = l.retireTo(ctx, redisKey, ls)
		return false
	}
	l.retiring.Add(1) // under retireMu, so never once Close waits
	l.retireMu.Unlock()
	go func() {
		defer l.retiring.Done()
		defer l.claims.Delete(key)
		_ = l.retireTo(ctx, redisKey, ls)
	}()
	return true
}

// sweepers is how many give-backs a sweep has under way at once: they join
// the batches (see WithBatch) as concurrent calls do, so that a sweep gives
// back about as many leases per round trip as the grants of a flood of new
// keys take, rather than one.
const sweepers = 64

// sweepHook and sweptHook, when set (by tests, before the limiter is
// built), are called by an auto-sweep before it looks for the expired
// leases, and once it has ended them, before it sets the threshold of the
// next.
var sweepHook, sweptHook func()

// sweepLeases ends the leases expired at now, giving their unspent
// requests back to Redis, up to sweepers round trips at a time, and
// returns how many it ended and how many live leases it saw.
func (l *Limiter) sweepLeases(now int64) (ended, live int) {
	type expired struct {
		key string
		ls  *lease
	}
	var done []expired
	l.leases.Range(func(key string, ls *lease) bool {
		switch {
		case now < ls.expires:
			live++
		case l.unmap(key, ls): // else ended by another sweep or a new lease
			done = append(done, expired{key, ls})
		}
		return true
	})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(done), sweepers) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(done)); i = next.Add(1) - 1 {
				_ = l.retire(context.Background(), done[i].key, done[i].ls)
			}
		})
	}
	wg.Wait()
	return len(done), live
}

// sweepLeasesLater starts a sweep of the expired leases on a goroutine of
// its own when the map holds sweepAt leases or more and no sweep is under
// way. A grant for a new key calls it: without it, the lease of a key that
// comes no more would stay in memory, and its unspent requests out of the
// other instances' reach, until a Sweep or Close, so that a flood of
// distinct keys (client addresses) would grow the map without bound. The
// give-backs are round trips, which the caller that granted a lease must
// not wait for; Close waits for them. Once done, the next sweep waits for
// twice the live leases that this one saw, and at least the threshold, so
// that a map of live leases costs a sweep per doubling, not one per grant.
// The leases granted while it ran are not counted: under a flood they
// expire as fast as they come, and counting them doubled the wait at each
// sweep, so that the map grew without bound.
func (l *Limiter) sweepLeasesLater() {
	if l.leaseSweep <= 0 || int64(l.leases.Size()) < l.sweepAt.Load() {
		return
	}
	// One sweep at a time: of the grants that see the map at its threshold,
	// the one whose CAS sets sweeping starts it, and the goroutine clears
	// it once sweepAt is set for the next.
	if !l.sweeping.CompareAndSwap(false, true) {
		return
	}
	l.retireMu.Lock()
	if l.retireStopped { // Close is under way: it ends every lease
		l.retireMu.Unlock()
		l.sweeping.Store(false)
		return
	}
	l.retiring.Add(1) // under retireMu, so never once Close waits
	l.retireMu.Unlock()
	go func() {
		defer l.retiring.Done()
		if sweepHook != nil {
			sweepHook()
		}
		_, live := l.sweepLeases(l.localNow())
		if sweptHook != nil {
			sweptHook()
		}
		l.sweepAt.Store(max(l.leaseSweep, 2*int64(live)))
		l.sweeping.Store(false)
	}()
}

// retire gives the unspent requests of ls, key's lease that is no longer
// in the map, back to Redis.
func (l *Limiter) retire(ctx context.Context, key string, ls *lease) error {
	return l.retireTo(ctx, l.redisKey(key), ls)
}

func (l *Limiter) retireTo(ctx context.Context, redisKey string, ls *lease) error {
	left := ls.left.Swap(-1)
	if left <= 0 {
		return nil
	}
	_, err := l.giveBack(ctx, redisKey, left, ls.at)
	return err
}

// unmap removes key's lease from the map if it is still ls, and reports
// whether it did. When key has no lease (another sweep, or Close, removed
// ls first), the valueFn deletes: to keep, Compute would store its zero
// value, a nil lease, which every later take of key would dereference.
func (l *Limiter) unmap(key string, ls *lease) (removed bool) {
	l.leases.Compute(key, func(cur *lease, loaded bool) (*lease, bool) {
		removed = loaded && cur == ls
		return cur, removed || !loaded
	})
	return removed
}

// windowEnd returns the end of the fixed window of length window, aligned
// on the clock's origin, that holds tick t.
func windowEnd(t, window int64) int64 {
	i := t / window
	if t%window < 0 {
		i--
	}
	return (i + 1) * window
}
