package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/burst"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/reportbatch"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// multi enforces a rule of several limits, each by its shared limiter under
// the key of its own scope (see stateKey): a request passes only when every
// limit admits it, and is then counted by each; when one denies it, the
// limits that admitted it give it back, in reverse order, each with its own
// receipt. That is the protocol of [composite.Limiter], with one key per
// child instead of one for all, so a denial by one limit never spends
// another's quota, whatever their scopes. It holds no state of its own, so
// building a new one over the same limiters loses nothing.
//
// The limits that can be asked together (those that a hotlimit.Batcher
// sends in one round trip with its own, such as redislimit's on one client
// without a lease), when two or more can, are asked in one go when the
// first of them has its turn (see prefetch), and those that took a request
// another limit denies give it back as the limits asked before the denier
// do; the rest are asked in the rule's order, sliding logs last: a sliding
// log is the one limiter whose refund may hold future capacity longer than the
// refunded request would have (it expires its oldest entry, not the
// refunded one; see slidinglog.Limiter.Refund), and a denial never refunds
// the last limit asked. Nor is a sliding log of slidinglog's asked by a Take
// after another limit denied the request, to learn its wait: it tells it
// without one (see wait). So a rule like "10/s token bucket and 100/min sliding log"
// is exact whatever its order; and no sliding log is asked with the others
// in one go. A sliding log that cannot tell its wait so
// (redislimit's) is asked by a Take for one request, and refunded when it
// admits it, which takes a change of its state between its report and the
// question, under concurrent requests.
type multi struct {
	children []hotlimit.Refunder
	// withContext[i] is children[i] when it takes a context, else nil.
	withContext []hotlimit.ContextRefunder
	// remote[i] is composite.UsesContext(children[i]): children[i] may
	// fail once the caller's context has ended (see wait). A factory's
	// composite of in-memory limiters takes a context, but never fails.
	remote []bool
	limits Limits // limits[i] is what children[i] enforces, with its scope
	// asks[i] asks children[i] for its wait after a denial (see wait),
	// as a composite asks its children: a sliding log without a Take.
	asks []composite.Asker
	// defBurst is the service's default burst (see capacity).
	defBurst int
	// most is the most requests at once every limit not in shadow mode can
	// ever admit: the least capacity among them (Unlimited has none to
	// exceed), math.MaxInt when there is none. A request of more can
	// never pass the rule, and no limit is asked to take it (see beyond).
	most int
	// batched has bit i set when children[i] is asked together with the
	// others set, by batcher, before the rest are asked in turn (see
	// prefetch): batcher sends them in one round trip with its own (see
	// hotlimit.Batcher.Batches); 0 when fewer than two limits can be.
	batched uint32
	batcher hotlimit.Batcher
}

// newMulti returns the multi of limits, enforced by children (children[i]
// enforces limits[i], without its scope). Every child must be a
// hotlimit.Refunder, and there may be at most composite.MaxChildren. Errors
// read after the rule's path: "[1]: ..." names the limit.
func newMulti(limits Limits, children []hotlimit.Limiter, defBurst int) (*multi, error) {
	if len(children) > composite.MaxChildren {
		return nil, fmt.Errorf(": %d limits, at most %d: %w", len(children), composite.MaxChildren, hotlimit.ErrInvalidConfig)
	}
	order := make([]int, len(children))
	for i := range order {
		order[i] = i
	}
	// logs[i] is 1 when limits[i] is a sliding log, by its Config
	// (whatever type a factory built it as: a wrapper reports none) or by
	// its limiter, else 0.
	logs := make([]int, len(children))
	for i, c := range children {
		logs[i] = isLog(c)
		if limits[i].Algorithm == hotlimit.SlidingLog {
			logs[i] = 1
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return logs[a] - logs[b] })
	m := &multi{
		children:    make([]hotlimit.Refunder, len(children)),
		withContext: make([]hotlimit.ContextRefunder, len(children)),
		remote:      make([]bool, len(children)),
		limits:      make(Limits, len(children)),
		asks:        make([]composite.Asker, len(children)),
		defBurst:    defBurst,
		most:        math.MaxInt,
	}
	for _, c := range limits {
		if !c.Shadow && c.Algorithm != hotlimit.Unlimited {
			m.most = min(m.most, capacity(c, defBurst))
		}
	}
	var candidates uint32 // limits that may be asked together: see below
	for to, from := range order {
		r, ok := children[from].(hotlimit.Refunder)
		if !ok {
			return nil, fmt.Errorf("[%d]: %T is not a hotlimit.Refunder: it could not give back what it took when another limit denies: %w",
				from, children[from], hotlimit.ErrInvalidConfig)
		}
		m.children[to], m.limits[to] = r, limits[from]
		m.asks[to] = composite.NewAsker(r, logs[from] == 1)
		m.withContext[to], _ = r.(hotlimit.ContextRefunder)
		m.remote[to] = composite.UsesContext(r)
		// Sliding logs are left out of the batch: asked last, one at a
		// time, so that a denial never refunds one (see above).
		if logs[from] == 0 && m.withContext[to] != nil {
			candidates |= 1 << to
		}
	}
	// The batcher is the first limiter that can be asked with others, and
	// the batch the limits it sends in one round trip with its own: a
	// limit it would decide by itself (redislimit's with a lease, on
	// another client) saves nothing asked ahead, and is asked in turn.
	for i, c := range m.children {
		if b, ok := c.(hotlimit.Batcher); ok && candidates&(1<<i) != 0 && b.Batches(b) {
			m.batcher = b
			break
		}
	}
	for i := range m.children {
		if m.batcher != nil && candidates&(1<<i) != 0 && m.batcher.Batches(m.withContext[i]) {
			m.batched |= 1 << i
		}
	}
	if bits.OnesCount32(m.batched) < 2 {
		m.batched, m.batcher = 0, nil
	}
	return m, nil
}

// keys finds each scope's key once per decision.
// Keys come from buf when it is not nil, else from cache.
type keys struct {
	cache     *keyCache
	buf       *keyBuf
	user, api string
	made      [4]bool
	key       [4]string
}

// of returns the key of scope.
func (k *keys) of(scope hotlimit.Scope) string {
	if !k.made[scope] {
		if k.buf != nil {
			k.key[scope] = k.buf.key(scope, k.user, k.api)
		} else {
			k.key[scope] = k.cache.key(scope, k.user, k.api)
		}
		k.made[scope] = true
	}
	return k.key[scope]
}

// take asks every limit for n requests from user to api: all pass and stay
// counted by every limit, or none does and no limit keeps any. It returns the
// decision, computed as composite.Limiter computes it, the index of the
// limit that decided and that limit's own decision: the one that denied
// (the decision's RetryAfter is then the least wait after which every limit
// admits the request, that limit's or a later one's, see wait; when n is
// more than some limit not in shadow mode can ever admit, no limit is asked
// to take it, and the denial says hotlimit.Never, see beyond), or, when all
// admitted, the most constrained, the one with the least share
// of its capacity left (Remaining/Capacity, see lessShare; the first on a
// tie) of those that decided: a limit that could not decide (its error, see
// undecided), whose numbers are its failure policy's, decides only when no
// limit did (see constrains). The capacity is the one
// hotlimit.ClassifyCapacity measures the near-limit share of, so the
// decider is near its limit exactly when some limit it was chosen among
// is. n < 1 only reports, as composite does.
//
// A limit in shadow mode (Config.Shadow) never denies: when it would have,
// the request goes on to the others, shadow is the first such limit (else
// -1), and its decision stays out of the one returned unless every limit is
// in shadow mode.
//
// When ctx is not nil, the limits that take a context (see
// hotlimit.ContextRefunder) are asked under it, and their refunds under it
// without its cancellation, so that a denial gives back what it can even
// when the request is being cancelled; the error joins theirs. When ctx
// has ended by the time every limit admitted the request and some limit
// could not decide (its failure policy passed it, counting nothing), every
// limit gives back what its receipt says it took, as a denial's give-back
// does: the request has ended, is not to be served, and so counts nowhere.
//
// When each is not nil, each[i] is set to the i-th limit's own decision
// after the request: its Take's when every limit admitted it, else a
// report (n = 0) taken after the refunds, except the denier's, which is
// its Take's (a later limit then asked for n to learn its wait keeps its
// report). An ended request's give-back leaves them its Takes'. A request
// no limit is asked to take leaves every limit its report, the decider's
// denied (see beyond).
//
// When taken is not nil and the request passed and stays counted, taken[i]
// is set to what the i-th limit took by its own receipt (see
// [Service.TakeReceipt]): the zero Receipt for a limit that took nothing, one in
// shadow mode that would have denied, one that could not decide (its
// failure policy passed the request: its quota was not asked), and one of
// [hotlimit.Unlimited], which counts nothing and gives the zero Receipt.
// Otherwise taken is left as it is.
func (m *multi) take(ctx context.Context, k keys, n int, each *[composite.MaxChildren]hotlimit.Decision, taken *[composite.MaxChildren]hotlimit.Receipt) (d hotlimit.Decision, decider int, own hotlimit.Decision, shadow int, err error) {
	var errs []error
	shadow = -1
	if n < 1 {
		d, i, own := m.report(ctx, &k, n, -1, hotlimit.Decision{}, &errs, each, nil, nil)
		return d, i, own, shadow, errors.Join(errs...)
	}
	if n > m.most {
		d, i, own := m.beyond(ctx, &k, n, &errs, each)
		return d, i, own, shadow, errors.Join(errs...)
	}
	var receipts [composite.MaxChildren]hotlimit.Receipt
	// held is how many limits, from the first, may hold what they took by
	// receipts. Should a limit panic in its Take (its clock, a factory's
	// limiter, an observer of its own), those are given back on the way
	// out, and the panic goes on unchanged: a request that was never
	// decided counts nowhere. Once every limit has been asked, or one
	// denied and the others' give-back starts, held is 0: the deferred
	// call then does nothing, and nothing is given back twice.
	held := 0
	defer func() {
		if held > 0 {
			m.giveBack(ctx, &k, held, &receipts, nil, nil)
		}
	}()
	// The limits that can be asked together are asked in one go (one
	// round trip to Redis) when the first of them has its turn: their
	// decisions, receipts and errors are then here, and those that
	// admitted the request hold it as any limit asked before the one that
	// denies would. Those that took it after the denier (in the rule's
	// order) are given back with the others. batch holds their takes, in
	// the rule's order, each taken off as its limit's turn comes;
	// batchedUpTo is one past the last of them.
	var batch []hotlimit.BatchTake
	batchedUpTo := 0
	fetched := false
	failed := false            // some limit could not decide (its error)
	var undecidedLimits uint32 // bit i: the i-th limit could not decide
	var best, shadowed, bestShadowed hotlimit.Decision
	shadowDecider := 0    // the most constrained limit in shadow mode
	counted := false      // d holds a decision of a limit not in shadow mode
	shadowedSome := false // shadowed holds a decision of a limit in shadow mode
	// Whether the decider and shadowDecider could not decide (see
	// undecided), so that a limit that did decide is chosen over them.
	bestUndecided, shadowUndecided := false, false
	for i, c := range m.children {
		var cd hotlimit.Decision
		var r hotlimit.Receipt
		var err error
		cdUndecided := false
		decided := false // by the batch
		if m.batched&(1<<i) != 0 {
			if !fetched {
				batch, batchedUpTo = m.prefetch(ctx, &k, n, &receipts)
				held, fetched = max(held, batchedUpTo), true
			}
			t := &batch[0]
			batch = batch[1:]
			// One its limiter could not decide ahead is asked in turn,
			// by its failure policy (see hotlimit.BatchTake.Ahead).
			if decided = !errors.Is(t.Err, hotlimit.ErrNotDecided); decided {
				cd, r, err = t.Decision, t.Receipt, t.Err
				if ctx == nil {
					err = nil // as TakeReceipt's, below
				}
			}
		}
		switch cc := m.withContext[i]; {
		case decided:
		case ctx != nil && cc != nil:
			cd, r, err = cc.TakeReceiptContext(ctx, k.of(m.limits[i].Scope), n)
		default:
			cd, r = c.TakeReceipt(k.of(m.limits[i].Scope), n)
		}
		if err != nil {
			errs, failed = m.appendLimitErr(errs, i, err), true
			if cdUndecided = undecided(err); cdUndecided {
				undecidedLimits |= 1 << i
			}
		}
		if each != nil {
			each[i] = cd
		}
		if !cd.Allowed && m.limits[i].Shadow {
			// A limit in shadow mode decides and counts as usual but never
			// denies: it took nothing, and the request goes on. Its
			// decision stays out of the caller's, as if it were not there,
			// unless every limit is in shadow mode.
			if shadow < 0 {
				shadow, shadowDecider, bestShadowed = i, i, cd
			}
			shadowed, shadowedSome = merge(shadowed, cd, !shadowedSome), true
			continue
		}
		if !cd.Allowed {
			// Give back what the limits before it took, in reverse order,
			// each with its own receipt under its own key: right after
			// its Take, a refund restores the limit. Those of the batch
			// give back and report in one go (see askReports).
			var asked reportbatch.Set
			m.askReports(ctx, &k, 0, i, &receipts, &asked)
			held = 0
			errs = m.giveBack(ctx, &k, max(i, batchedUpTo), &receipts, errs, &asked)
			// The others as they are now: the refunded ones restored,
			// the later ones reporting, not taking; those in shadow
			// mode left out, as the denier is not one. The denier's own
			// decision is merged in its place, so that a tie goes to
			// the first limit. Then the wait until every limit admits
			// the request: the denier's, or that of a later limit that
			// would deny it too.
			var rem [composite.MaxChildren]int
			rd, _, _ := m.report(ctx, &k, 0, i, cd, &errs, each, &rem, &asked)
			rd.Allowed = false
			rd.RetryAfter, errs = m.wait(ctx, &k, n, i, cd.RetryAfter, &rem, errs)
			return rd, i, cd, -1, errors.Join(errs...)
		}
		receipts[i], held = r, max(held, i+1)
		if m.limits[i].Shadow {
			// The most constrained of them decides when every limit is
			// in shadow mode, unless one would have denied.
			if shadow < 0 && (!shadowedSome || m.constrains(i, cd, cdUndecided, shadowDecider, bestShadowed, shadowUndecided)) {
				shadowDecider, bestShadowed, shadowUndecided = i, cd, cdUndecided
			}
			shadowed, shadowedSome = merge(shadowed, cd, !shadowedSome), true
			continue
		}
		if !counted || m.constrains(i, cd, cdUndecided, decider, best, bestUndecided) {
			decider, best, bestUndecided = i, cd, cdUndecided
		}
		d = merge(d, cd, !counted)
		counted = true
	}
	// Every limit was asked: the request is decided.
	held = 0
	if !counted { // every limit is in shadow mode
		d, decider, best = shadowed, shadowDecider, bestShadowed
	}
	d.Allowed, d.RetryAfter = true, 0
	var ended error
	if failed {
		ended = ctxend.Err(ctx)
	}
	if ended != nil {
		// The request ended while a limit could not decide, which passed
		// it by its failure policy, counting nothing: its caller will not
		// serve it, so the limits that counted it give it back too, and no
		// limit keeps a request that was never served. A failed limit's
		// receipt is given back as well, as a denial's give-back does: it
		// is the zero Receipt, a no-op, unless that limit counted after all.
		errs = m.giveBack(ctx, &k, len(m.children), &receipts, errs, nil)
		// The error says so, whatever the limits' own errors are: it is
		// how a caller that reads ctx later, when ctx may have ended
		// only since, tells a request given back from one that counts.
		errs = append(errs, fmt.Errorf("the request ended while a limit could not decide, and was given back: %w", ended))
	} else if taken != nil {
		for i, r := range receipts[:len(m.children)] {
			if r.N > 0 && undecidedLimits&(1<<i) == 0 {
				taken[i] = r
			}
		}
	}
	return d, decider, best, shadow, errors.Join(errs...)
}

// prefetch takes n requests from every limit of m.batched at once, by
// m.batcher, under ctx (context.Background when nil), when the first of
// them has its turn: the others are asked ahead of theirs
// (hotlimit.BatchTake.Ahead), the first in its turn, so that when Redis
// cannot decide it, its failure policy decides it with Redis's error, as
// it decides the limits asked in turn, and the breaker hears of it once.
// It returns their takes, decided (or not, see Ahead), in the rule's
// order, with each one's receipt also set in r, and one past the last of
// those limits.
func (m *multi) prefetch(ctx context.Context, k *keys, n int, r *[composite.MaxChildren]hotlimit.Receipt) ([]hotlimit.BatchTake, int) {
	if ctx == nil {
		ctx = context.Background()
	}
	takes := make([]hotlimit.BatchTake, 0, bits.OnesCount32(m.batched))
	upTo := 0
	for i := range m.children {
		if m.batched&(1<<i) != 0 {
			takes = append(takes, hotlimit.BatchTake{Limiter: m.withContext[i], Key: k.of(m.limits[i].Scope), N: n, Ahead: len(takes) > 0})
			upTo = i + 1
		}
	}
	m.batcher.TakeBatch(ctx, takes)
	j := 0
	for i := range m.children {
		if m.batched&(1<<i) != 0 {
			r[i] = takes[j].Receipt
			j++
		}
	}
	return takes, upTo
}

// beyond is take for n more than some limit not in shadow mode can ever
// admit (m.most): the request can never pass, so, as composite.Limiter
// does, no limit is asked to take it. Taking it from the limits before the
// one that denies, to give it back at once, would leave them short of n
// meanwhile, denying concurrent requests they have room for, and a sliding
// log longer (its refund marks its oldest entries, not the request's, see
// slidinglog.Limiter.Refund): a request that can never pass would change
// what later ones get. Every limit reports instead (n = 0); the limit that
// decided is the first not in shadow mode that can never admit n and whose
// report did not fail (a failed report tells nothing of its quota), or,
// when every such limit failed to report, the first of them: not a limit
// merely short of n for now, which would admit n later, so that the
// denial's "never" is that limit's own. There is one: n > m.most, the
// capacity of some limit not in shadow mode. The decision is the rule's
// denial: the limits' least Remaining and largest ResetAfter, RetryAfter
// hotlimit.Never. each, when not nil, is set to the reports, the
// decider's denied as the decision is.
func (m *multi) beyond(ctx context.Context, k *keys, n int, errs *[]error, each *[composite.MaxChildren]hotlimit.Decision) (d hotlimit.Decision, decider int, own hotlimit.Decision) {
	var all [composite.MaxChildren]hotlimit.Decision
	var rem [composite.MaxChildren]int
	d, _, _ = m.report(ctx, k, 0, -1, hotlimit.Decision{}, errs, &all, &rem, nil)
	decider = -1
	for i, c := range m.limits {
		if c.Shadow || capacity(c, m.defBurst) >= n {
			continue
		}
		if decider < 0 {
			decider = i
		}
		if rem[i] != math.MaxInt { // its report did not fail
			decider = i
			break
		}
	}
	d.Allowed, d.RetryAfter = false, hotlimit.Never
	all[decider].Allowed, all[decider].RetryAfter = false, hotlimit.Never
	if each != nil {
		*each = all
	}
	return d, decider, all[decider]
}

// wait returns how long the request of n that the denier-th limit denied,
// with RetryAfter retry, waits until every limit admits it, with errs and
// the errors of the limits it asks, as composite.Limiter computes it: the
// limits before the denier admitted it, and admit it later too; of those
// after it, rem holds the Remaining of their reports (math.MaxInt for one
// whose report failed), and a limit that reports n or more admits it now.
// Each other one is asked for its wait under its own key by its
// composite.Asker, as a composite asks its children, leaving nothing
// counted: a sliding log of slidinglog's by its RetryAfter, a composite a
// factory built holding one child by child, any other sliding log
// (redislimit's, or a factory's wrapper of one) by a Take for one request
// and not at all for several, and any other limit by a
// Take of the n requests, under ctx when it takes a context, given back at
// once with its own receipt when it admits them (its state changed since
// its report, under concurrent requests), as the give-back of a denial
// does. A limit that fails to decide gives no wait: its failure policy
// answered, not its quota. Not asked: a limit in shadow mode (it never
// denies), and every limit when the denier's wait is Never already; nor,
// once ctx has ended, a limit that decides with a context
// (composite.UsesContext): it could only fail (a redislimit limiter does
// not send the question, and its failure policy answers it, FailLocal
// taking it from its local limiter with no receipt to give it back by). A
// factory's composite of in-memory limiters is asked then too: it cannot
// fail.
//
// Each limit admits a request more readily as time passes with no other
// requests, so after the largest of these waits every limit admits it: the
// result is the least wait after which the request passes, but for the
// limits not asked.
func (m *multi) wait(ctx context.Context, k *keys, n, denier int, retry time.Duration, rem *[composite.MaxChildren]int, errs []error) (time.Duration, []error) {
	for j := denier + 1; j < len(m.children) && retry != hotlimit.Never; j++ {
		if rem[j] >= n || m.limits[j].Shadow {
			continue
		}
		if m.remote[j] && ctxend.Err(ctx) != nil {
			continue // it could only fail: see above
		}
		w, err := m.asks[j].Ask(ctx, k.of(m.limits[j].Scope), n)
		retry = max(retry, w)
		errs = m.appendLimitErr(errs, j, err)
	}
	return retry, errs
}

// giveBack refunds, in reverse order, what each of the first upto limits
// took with receipts (the zero Receipt of a limit that took nothing is a
// no-op), the limits that take a context under ctx without its
// cancellation (when ctx is not nil); it returns errs with their errors.
// A limit that asked (when asked is not nil) holds gave back already: its
// error is appended in its place. Should a limit's refund panic, the
// limits before it are given back all the same, and then the panic goes
// on: one limit failing keeps no other's quota.
func (m *multi) giveBack(ctx context.Context, k *keys, upto int, receipts *[composite.MaxChildren]hotlimit.Receipt, errs []error, asked *reportbatch.Set) []error {
	j := upto - 1
	defer func() {
		if j >= 0 { // the j-th limit's refund panicked
			m.giveBack(ctx, k, j, receipts, nil, asked)
		}
	}()
	for ; j >= 0; j-- {
		switch t := asked.Of(j); {
		case t != nil:
			if ctx != nil {
				errs = m.appendLimitErr(errs, j, t.GiveBackErr)
			}
		case ctx != nil && m.withContext[j] != nil:
			errs = m.appendLimitErr(errs, j, m.withContext[j].RefundContext(context.WithoutCancel(ctx), k.of(m.limits[j].Scope), receipts[j]))
		default:
			m.children[j].Refund(k.of(m.limits[j].Scope), receipts[j])
		}
	}
	return errs
}

// appendErr appends err to errs unless it is nil.
func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// limitError is an error of the rule's i-th limit, as take and report join
// it: [Service.TakeEach] gives each limit its own (LimitDecision.Err). It
// unwraps as the limiter's error.
type limitError struct {
	i   int
	c   hotlimit.Config
	err error
}

// Error names the limit before the limiter's error, as in
// "FixedWindow 10/1h0m0s per user: ...", so that a rule's errors joined
// tell its limits apart.
func (e *limitError) Error() string { return e.c.String() + ": " + e.err.Error() }
func (e *limitError) Unwrap() error { return e.err }

// appendLimitErr appends err, of the rule's i-th limit, to errs unless it
// is nil.
func (m *multi) appendLimitErr(errs []error, i int, err error) []error {
	if err != nil {
		return append(errs, &limitError{i: i, c: m.limits[i], err: err})
	}
	return errs
}

// limitErrors sets errOf[i] to the errors of the rule's i-th limit in err,
// an error take or report joined.
func limitErrors(err error, errOf *[composite.MaxChildren]error) {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return
	}
	for _, e := range joined.Unwrap() {
		if le, ok := e.(*limitError); ok {
			// A composite's error beside its own decision (a child that
			// failed to report its state for another's real denial, say)
			// leaves that decision the limit's own.
			if err := composite.DecidingError(le.err); err != nil {
				errOf[le.i] = errors.Join(errOf[le.i], err)
			}
		}
	}
}

// report asks every limit for n ≤ 0 requests, which changes nothing, but
// the known-th (none when known < 0), whose decision is given as kd (it is
// not in shadow mode): those of m.batched together (see askReports), unless
// asked is given, which holds their answers already. It merges their decisions in the rule's order as
// composite does: Allowed if all are, the largest RetryAfter. The index it
// returns is the first limit that denies, or else the most constrained by
// the share of its capacity left (see lessShare) of those that decided (see
// constrains: a limit whose report failed is known to have failed only
// when it is asked with a context), with that limit's own decision. Limits
// in shadow mode stay out of both, as in take, unless every limit is in
// shadow mode. When each is not nil, each[i] is set to the
// decision of every limit asked; when rem is not nil, rem[i] to its
// Remaining, or math.MaxInt when its report failed: one that takes a
// context is then asked under context.Background when ctx is nil (its error
// still left out), to know that.
func (m *multi) report(ctx context.Context, k *keys, n, known int, kd hotlimit.Decision, errs *[]error, each *[composite.MaxChildren]hotlimit.Decision, rem *[composite.MaxChildren]int, asked *reportbatch.Set) (d hotlimit.Decision, decider int, own hotlimit.Decision) {
	if asked == nil {
		asked = new(reportbatch.Set)
		m.askReports(ctx, k, n, known, nil, asked)
	}
	counted, shadowed := reported{m: m, decider: -1}, reported{m: m, decider: -1}
	for i, c := range m.children {
		if i == known {
			counted.add(i, kd, false) // it denied: it is the decider whatever its error
			continue
		}
		var cd hotlimit.Decision
		var err error
		t := asked.Decided(i) // else asked here, in its turn
		if cc := m.withContext[i]; ctx != nil && cc != nil {
			if cd, err = answer(t); t == nil {
				cd, _, err = cc.TakeReceiptContext(ctx, k.of(m.limits[i].Scope), n) // n ≤ 0 takes nothing
			}
			*errs = m.appendLimitErr(*errs, i, err)
		} else if cc != nil && rem != nil {
			// Take's (no context): asked with one all the same, so that
			// its failure, which Take does not return, is known, and it
			// is not asked again for its wait (see wait).
			if cd, err = answer(t); t == nil {
				cd, _, err = cc.TakeReceiptContext(context.Background(), k.of(m.limits[i].Scope), n)
			}
		} else if t != nil {
			cd = t.Decision // Take's: its failure is not told
		} else {
			cd = c.Take(k.of(m.limits[i].Scope), n)
		}
		if each != nil {
			each[i] = cd
		}
		if rem != nil {
			rem[i] = cd.Remaining
			if err != nil {
				rem[i] = math.MaxInt
			}
		}
		if m.limits[i].Shadow {
			shadowed.add(i, cd, undecided(err))
		} else {
			counted.add(i, cd, undecided(err))
		}
	}
	if counted.decider >= 0 {
		return counted.d, counted.decider, counted.best
	}
	return shadowed.d, shadowed.decider, shadowed.best // a rule has a limit: one was asked
}

// askReports asks every limit of m.batched but the skip-th (if any) for n
// ≤ 0 requests, which changes nothing, in one go by m.batcher (see
// reportbatch.Set.Ask), each after giving back its receipt in r (when r
// is not nil) in the same round trip: a denial's give-backs and the
// reports after them cost one, as the takes before them did. Those
// receipts are the batcher's then, and zeroed in r: should it panic, it
// gave them back (see hotlimit.Batcher.TakeBatch), and a panic's give-back
// of r does not give them back twice.
func (m *multi) askReports(ctx context.Context, k *keys, n, skip int, r *[composite.MaxChildren]hotlimit.Receipt, asked *reportbatch.Set) {
	batch := m.batched
	if skip >= 0 {
		batch &^= 1 << skip
	}
	asked.Ask(ctx, m.batcher, batch, n, func(i int) hotlimit.BatchTake {
		t := hotlimit.BatchTake{Limiter: m.withContext[i], Key: k.of(m.limits[i].Scope)}
		if r != nil {
			t.GiveBack, r[i] = r[i], hotlimit.Receipt{}
		}
		return t
	})
}

// answer returns t's Decision and Err, or zeros when t is nil.
func answer(t *hotlimit.BatchTake) (hotlimit.Decision, error) {
	if t == nil {
		return hotlimit.Decision{}, nil
	}
	return t.Decision, t.Err
}

// reported is report's merge of some limits' decisions; decider is -1 until
// one is added.
type reported struct {
	m       *multi
	d, best hotlimit.Decision
	decider int
	// undecided: the decider could not decide (see multi.constrains).
	undecided bool
}

// add folds the i-th limit's decision cd into r; cdUndecided says that the
// limit could not decide (see undecided).
func (r *reported) add(i int, cd hotlimit.Decision, cdUndecided bool) {
	first := r.decider < 0
	if first || r.best.Allowed && (!cd.Allowed || r.m.constrains(i, cd, cdUndecided, r.decider, r.best, r.undecided)) {
		r.decider, r.best, r.undecided = i, cd, cdUndecided
	}
	allowed, retry := first || r.d.Allowed, r.d.RetryAfter
	r.d = merge(r.d, cd, first)
	r.d.Allowed = allowed && cd.Allowed
	r.d.RetryAfter = max(retry, cd.RetryAfter)
}

// merge folds a limit's decision cd into d, the limits' so far (first: cd is
// the first one), as composite does: Limit and Remaining of the limit with
// the least Remaining, the first on a tie, and the largest ResetAfter.
// Allowed and RetryAfter are left to the caller.
func merge(d, cd hotlimit.Decision, first bool) hotlimit.Decision {
	if first || cd.Remaining < d.Remaining {
		d.Limit, d.Remaining = cd.Limit, cd.Remaining
	}
	d.ResetAfter = max(d.ResetAfter, cd.ResetAfter)
	return d
}

// constrains reports whether the i-th limit's decision a, which allowed the
// request, is to decide it rather than the j-th limit's b, which allowed it
// too: aUndecided and bUndecided say that the limit could not decide (see
// undecided). A limit that decided is chosen over one that could not, whose
// numbers are its failure policy's (redislimit's FailOpen reports a
// Remaining of 0 that counts nothing): a made-up share never names the
// limit a client is told it is paced by, nor the near-limit outcome. Of two
// limits alike, the one with the smaller share of its capacity left (see
// lessShare).
func (m *multi) constrains(i int, a hotlimit.Decision, aUndecided bool, j int, b hotlimit.Decision, bUndecided bool) bool {
	if aUndecided != bUndecided {
		return bUndecided
	}
	return m.lessShare(i, a, j, b)
}

// undecided reports whether err, a limit's error beside its decision, says
// that the limit could not decide, its failure policy deciding instead:
// composite.DecidingError of it is set, as service.LimitDecision.Err is.
func undecided(err error) bool {
	return err != nil && composite.DecidingError(err) != nil
}

// lessShare reports whether the i-th limit's decision a leaves a smaller
// share of its capacity than the j-th limit's decision b. The capacity is
// the most the limit's Remaining can be, as its limiter enforces it (see
// capacity): its burst for a token bucket or GCRA with one, else its Limit.
// The share is the one the observer's outcome measures
// (hotlimit.ClassifyCapacity, under one near-limit share for every limit),
// so the limit with the least share is near its limit whenever any is.
func (m *multi) lessShare(i int, a hotlimit.Decision, j int, b hotlimit.Decision) bool {
	return lessShare(a.Remaining, capacity(m.limits[i], m.defBurst), b.Remaining, capacity(m.limits[j], m.defBurst))
}

// capacity is c's [hotlimit.Config.Capacity] as the service's limiters
// enforce it: a token bucket or GCRA that sets no burst of its own takes
// the service's default, defBurst ([hotlimit.WithBurst] among its options),
// when there is one. The service reports its limits so spelled out
// (burst.Spelled: the limit of TakePolicy, TakeEach's, an Event's Policy),
// so that a caller that advertises the capacity (httplimit's q) advertises
// the burst its clients get.
func capacity(c hotlimit.Config, defBurst int) int {
	return burst.Spelled(c, defBurst).Capacity()
}

// lessShare reports whether ra/ca < rb/cb, compared exactly in 128 bits (a
// negative Remaining counts as 0, a capacity below 1 as 1).
func lessShare(ra, ca, rb, cb int) bool {
	ahi, alo := bits.Mul64(uint64(max(ra, 0)), uint64(max(cb, 1)))
	bhi, blo := bits.Mul64(uint64(max(rb, 0)), uint64(max(ca, 1)))
	return ahi < bhi || ahi == bhi && alo < blo
}

// isLog is 1 for a sliding log, in memory or built by a factory whose
// limiters report their Config (as redislimit's do), else 0.
func isLog(l hotlimit.Limiter) int {
	switch l := l.(type) {
	case *slidinglog.Limiter:
		return 1
	case interface{ Config() hotlimit.Config }:
		if l.Config().Algorithm == hotlimit.SlidingLog {
			return 1
		}
	}
	return 0
}
