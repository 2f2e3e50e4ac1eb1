package redislimit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hotlimit/hotlimit"
	"github.com/redis/go-redis/v9"
)

// Take is one decision of [TakeAll]: N requests from Key under Limiter, and
// what TakeReceiptContext would return for them.
type Take struct {
	Limiter *Limiter
	Key     string
	N       int
	// Ahead is [hotlimit.BatchTake]'s: when Redis cannot decide the take
	// (an error, the timeout, an open breaker), its failure policy does
	// not either, and Err wraps [hotlimit.ErrNotDecided]. A take decided
	// by itself (see TakeAll) is decided as TakeReceiptContext decides.
	Ahead bool
	// GiveBack, when its N is 1 or more, is a receipt of Limiter's for Key
	// that TakeAll gives back before it decides the take, as
	// RefundContext would, in the same round trip when the take is sent
	// with others: a denied request's give-backs and the reports (N = 0)
	// that follow them, say. GiveBackErr is RefundContext's error; do not
	// give the receipt back again after one.
	GiveBack hotlimit.Receipt

	// Decision, Receipt, Err and GiveBackErr are set by TakeAll.
	Decision    hotlimit.Decision
	Receipt     hotlimit.Receipt
	Err         error
	GiveBackErr error
}

// TakeAll decides every take as [Limiter.TakeReceiptContext] would, each
// independently of the others, in one round trip: the script calls of
// every take whose Limiter shares the first one's client and timeout go to
// Redis together, as the several limits of one request (the descriptors of
// an Envoy rate limit request) would be. While other calls of the first
// take's Limiter are under way (concurrent requests), they join the next
// batch of that Limiter (see [WithBatch]), so that concurrent TakeAll calls
// share one pipeline; else they are sent in a pipeline of their own by the
// calling goroutine. A take whose Limiter has a lease (see [WithLease]),
// another client or timeout than the first, or a client without
// ContextTimeoutEnabled (whose pipeline could outlast the timeout), is
// decided by itself, after the pipeline.
// Every take's Decision, Receipt and Err are set; Err and the failure
// policy's Decision when Redis fails (but for a take asked Ahead, see
// Take), as in TakeReceiptContext, or when ctx
// ends first: the takes that joined a batch are then given back to Redis
// if it ran them (see [WithTimeout] for what a frozen Redis may still
// count). A nil Limiter's take gets an error wrapping
// [hotlimit.ErrInvalidConfig]; a zero Limiter's panics, as its methods do.
// When a take carries a GiveBack, every take is sent under ctx without its
// cancellation, as a give-back must be (see RefundContext): the limiters'
// timeouts still bound them. Should a take panic (a hook or an observer of
// its limiter's failure policy, a clock), what the others took is given
// back to Redis, and so is each GiveBack not sent yet, and the panic goes
// on: the caller holds no receipt of them. A nil ctx is
// context.Background().
func TakeAll(ctx context.Context, takes []Take) {
	ctx = orBackground(ctx)
	// owed has bit i set while the i-th take's GiveBack is yet to be sent.
	var owed bitset
	for i := range takes {
		t := &takes[i]
		t.Receipt, t.GiveBackErr = hotlimit.Receipt{}, nil // set as each take is decided
		if t.GiveBack.N > 0 {
			owed.set(i)
		}
	}
	if !owed.empty() {
		ctx = context.WithoutCancel(ctx)
	}
	decided := false
	defer func() {
		if !decided {
			giveBackAll(ctx, takes, owed)
		}
	}()
	// giveBackAlone gives back the i-th take's GiveBack by itself, as
	// RefundContext does, for a take not sent with the others.
	giveBackAlone := func(i int) {
		if owed.has(i) {
			t := &takes[i]
			owed.clear(i)
			t.GiveBackErr = t.Limiter.RefundContext(ctx, t.Key, t.GiveBack)
		}
	}
	var first *Limiter
	var c *call
	var pipedFirst [8]piping // most batches are a request's few limits
	piped := pipedFirst[:0]
	var alone []int
	var probes []int // takes that probe their breaker: by themselves
	var probed []*breaker
	var lookups lookupFailures
	for i := range takes {
		t := &takes[i]
		l := t.Limiter
		switch {
		case l == nil:
			t.Decision, t.Receipt, t.Err = hotlimit.Decision{}, hotlimit.Receipt{}, errNilLimiter
			if owed.has(i) {
				owed.clear(i)
				t.GiveBackErr = errNilLimiter
			}
			continue
		case l.leases != nil, !l.batch.enforced,
			first != nil && (l.client != first.client || l.set.timeout != first.set.timeout):
			giveBackAlone(i)
			alone = append(alone, i)
			continue
		}
		if owed.has(i) && l.nodes != nil && l.breaker.open() {
			// On a cluster, l.breaker guards the lookup of the key's
			// master: a give-back goes first, by itself, as below (it
			// may be the lookup's probe).
			giveBackAlone(i)
		}
		if err := lookups.failed(ctx, l, t.Ahead); err != nil {
			giveBackAlone(i)
			t.Decision, t.Receipt, t.Err = t.outcome(reply{}, err)
			continue
		}
		k := l.redisKey(t.Key)
		b, err := l.breakerOf(ctx, k, t.Ahead)
		if err != nil {
			lookups.add(l, err, t.Ahead)
			giveBackAlone(i)
			t.Decision, t.Receipt, t.Err = t.outcome(reply{}, err)
			continue
		}
		if owed.has(i) && b.open() {
			// A give-back goes by itself first, as RefundContext's before
			// the take would: it may be the probe, and the take then
			// finds the breaker closed, or open again. Left for after
			// the take's own b.allow, it would be refused by the probe
			// the take became.
			giveBackAlone(i)
		}
		if t.Ahead && b.open() {
			// Refused or probing, its turn asks it: a probe made ahead
			// that fails leaves the breaker open, and the turn's call
			// refused, its failure policy hearing of the breaker, not of
			// the probe's error; one that passes is given back, when a
			// limit before it denies, by a request that never asked it.
			t.Decision, t.Receipt, t.Err = t.outcome(reply{}, ErrBreakerOpen)
			continue
		}
		ok, probe := b.allow()
		switch {
		case !ok:
			giveBackAlone(i)
			t.Decision, t.Receipt, t.Err = t.outcome(reply{}, ErrBreakerOpen)
			continue
		case probe:
			giveBackAlone(i)
			probes, probed = append(probes, i), append(probed, b)
			continue
		}
		var a, back []any // the take's arguments, and the give-back's, sent before it
		switch {
		case owed.has(i) && t.N == 0:
			// A report after a give-back is the give-back's own call:
			// each script returns the key's state once the give-back is
			// in, as a report would (see scripts/prelude.lua).
			a, err = l.args(0, 0, int64(min(t.GiveBack.N, int(l.burst))), t.GiveBack.At/int64(l.unit))
		case owed.has(i):
			back, err = l.args(0, 0, int64(min(t.GiveBack.N, int(l.burst))), t.GiveBack.At/int64(l.unit))
			if err == nil {
				a, err = l.args(int64(t.N), 0, 0, 0)
			}
		default:
			a, err = l.args(int64(t.N), 0, 0, 0)
		}
		if err != nil {
			l.observe(ctx, b, err)
			giveBackAlone(i)
			t.Decision, t.Receipt, t.Err = t.outcome(reply{}, err)
			continue
		}
		if first == nil {
			first, c = l, newCall()
		}
		p := piping{take: i, breaker: b, back: -1}
		if back != nil {
			p.back = len(c.ops)
			c.ops = append(c.ops, op{script: l.script, key: k, args: back, clock: l.clock, lim: l, breaker: b})
		}
		p.op = len(c.ops)
		c.ops = append(c.ops, op{script: l.script, key: k, args: a, clock: l.clock, lim: l, breaker: b})
		if owed.has(i) && back == nil {
			p.back = p.op // a give-back: its breaker hears of it
		} else {
			c.ops[p.op].ahead = t.Ahead
		}
		piped = append(piped, p)
	}
	if first != nil {
		// The give-backs are Redis's from here on: a panic before the
		// round trip ends (a hook of the client's) leaves it unknown
		// whether they were sent, and one given back twice would return
		// what was never taken.
		for _, p := range piped {
			if p.back >= 0 {
				owed.clear(p.take)
			}
		}
		err := first.runAll(ctx, c)
		// errOf is the outcome of the j-th op.
		errOf := func(j int) error {
			if err != nil {
				return err
			}
			return c.ops[j].err
		}
		// One round trip: each breaker hears once how it did (see
		// verdicts), then each take gets its decision. A take asked Ahead
		// that Redis did not answer is asked again in its turn, whose
		// call tells its breaker: told here too, its failure would count
		// twice, and the breaker open after half its threshold of
		// requests; and one that a limit before it denies, never asked in
		// turn, would count a failure for a request that never asked it.
		// A give-back is never asked again: its breaker hears of it.
		var v verdicts
		for _, p := range piped {
			t := &takes[p.take]
			if p.back >= 0 {
				if backErr := errOf(p.back); backErr != nil {
					t.GiveBackErr = t.Limiter.explain(backErr)
				}
				v.add(t.Limiter, p.breaker, errOf(p.back))
			}
			if opErr := errOf(p.op); p.op != p.back && (!t.Ahead || redisAnswered(opErr)) {
				v.add(t.Limiter, p.breaker, opErr)
			}
		}
		v.tell(ctx)
		// The takes Redis decided first, with their receipts: those that
		// it did not are decided by their failure policies, which may call
		// a hook or an observer, and should one panic, the receipts are
		// there to give back.
		for failed := range 2 {
			for _, p := range piped {
				t := &takes[p.take]
				rep, opErr := reply{}, errOf(p.op)
				if err == nil {
					rep = c.ops[p.op].rep
				}
				if p.op == p.back {
					rep.allowed = true // a report's: a give-back's reply may say not
				}
				if (opErr != nil) == (failed == 1) {
					t.Decision, t.Receipt, t.Err = t.outcome(rep, opErr)
				}
			}
		}
		if err == nil {
			c.free()
		}
	}
	for j, i := range probes {
		t := &takes[i]
		rep, err := t.Limiter.run(ctx, probed[j], t.Limiter.redisKey(t.Key), int64(t.N), 0, 0, 0, true)
		t.Limiter.observe(ctx, probed[j], err)
		t.Decision, t.Receipt, t.Err = t.outcome(rep, err)
	}
	for _, i := range alone {
		t := &takes[i]
		t.Decision, t.Receipt, t.Err = t.Limiter.take(ctx, t.Key, t.N)
	}
	decided = true
}

// runEach runs every step in order, each whatever the one before it does:
// should a step panic, the steps after it run all the same, and then the
// panic goes on.
func runEach(steps []func()) {
	i := 0
	defer func() {
		if i < len(steps) { // steps[i] panicked
			runEach(steps[i+1:])
		}
	}()
	for ; i < len(steps); i++ {
		steps[i]()
	}
}

// piping is a take of TakeAll sent in its pipeline: takes[take], whose
// node's breaker is breaker, is the call's ops[op], and its GiveBack
// ops[back] (op itself for a report), or back is -1.
type piping struct {
	take, op, back int
	breaker        *breaker
}

// bitset is a set of small non-negative integers.
type bitset []uint64

func (s *bitset) set(i int) {
	for len(*s) <= i/64 {
		*s = append(*s, 0)
	}
	(*s)[i/64] |= 1 << (i % 64)
}

func (s bitset) has(i int) bool { return i/64 < len(s) && s[i/64]&(1<<(i%64)) != 0 }

func (s bitset) clear(i int) {
	if i/64 < len(s) {
		s[i/64] &^= 1 << (i % 64)
	}
}

func (s bitset) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// outcome is the take's decision from Redis's reply rep, or, on err, its
// failure policy's, unless the take is asked Ahead: it is then left
// undecided, for its caller to ask in turn.
func (t *Take) outcome(rep reply, err error) (hotlimit.Decision, hotlimit.Receipt, error) {
	if err != nil && t.Ahead {
		return hotlimit.Decision{}, hotlimit.Receipt{}, fmt.Errorf("redislimit: %w: %w", hotlimit.ErrNotDecided, t.Limiter.explain(err))
	}
	return t.Limiter.outcome(t.Key, t.N, rep, err)
}

// giveBackAll gives back, in reverse order, what each take of takes took
// by its Receipt, and the GiveBack of each take in owed, under ctx without
// its cancellation, and clears the receipts: a TakeAll or TakeBatch that
// panics holds nothing. Should a give-back panic (its limiter's clock,
// which may be why TakeAll panicked), the takes before it are given back
// all the same, and then the panic goes on, as the limits before one whose
// refund panics are when a rule gives back one by one.
func giveBackAll(ctx context.Context, takes []Take, owed bitset) {
	i := len(takes) - 1
	defer func() {
		if i >= 0 { // the i-th take's give-back panicked
			giveBackAll(ctx, takes[:i], owed)
		}
	}()
	for ; i >= 0; i-- {
		t := &takes[i]
		if t.Limiter == nil {
			continue
		}
		if t.Receipt.N > 0 {
			_ = t.Limiter.RefundContext(context.WithoutCancel(ctx), t.Key, t.Receipt)
			t.Receipt = hotlimit.Receipt{}
		}
		if owed.has(i) {
			_ = t.Limiter.RefundContext(context.WithoutCancel(ctx), t.Key, t.GiveBack)
		}
	}
}

// TakeBatch makes l a [hotlimit.Batcher]: it decides the takes whose
// Limiter is a *Limiter as [TakeAll] does, in one round trip when they
// share a client and timeout (l need not be among them), and then any
// other take by its Limiter's own TakeReceiptContext. A take without a
// Limiter gets an error wrapping [hotlimit.ErrInvalidConfig]. Should a take
// panic, what the takes of *Limiters took is given back to Redis, as
// TakeAll does, and the panic goes on.
func (l *Limiter) TakeBatch(ctx context.Context, takes []hotlimit.BatchTake) {
	ctx = orBackground(ctx)
	// ours[j] is takes[at[j]]; most batches are a request's few limits
	var oursFirst [4]Take
	var atFirst [4]int
	ours, at := oursFirst[:0], atFirst[:0]
	for i := range takes {
		bt := &takes[i]
		if rl, ok := bt.Limiter.(*Limiter); ok {
			ours = append(ours, Take{Limiter: rl, Key: bt.Key, N: bt.N, Ahead: bt.Ahead, GiveBack: bt.GiveBack})
			at = append(at, i)
		}
	}
	TakeAll(ctx, ours) // should it panic, it gave back all of ours
	for j, t := range ours {
		bt := &takes[at[j]]
		bt.Decision, bt.Receipt, bt.Err, bt.GiveBackErr = t.Decision, t.Receipt, t.Err, t.GiveBackErr
	}
	// The others, one by one. next is the first not decided yet: should
	// one panic, ours and those decided are given back, and the GiveBacks
	// of the rest, each whatever another's give-back does: one that
	// panics stops none of the others.
	next := 0
	defer func() {
		if next == len(takes) {
			return
		}
		steps := []func(){func() { giveBackAll(ctx, ours, nil) }}
		for i := next - 1; i >= 0; i-- {
			bt := &takes[i]
			if _, ok := bt.Limiter.(*Limiter); !ok && bt.Limiter != nil && bt.Receipt.N > 0 {
				steps = append(steps, func() { _ = bt.Limiter.RefundContext(context.WithoutCancel(ctx), bt.Key, bt.Receipt) })
			}
		}
		for i := next + 1; i < len(takes); i++ {
			bt := &takes[i]
			if _, ok := bt.Limiter.(*Limiter); !ok && bt.Limiter != nil && bt.GiveBack.N > 0 {
				steps = append(steps, func() { _ = bt.Limiter.RefundContext(context.WithoutCancel(ctx), bt.Key, bt.GiveBack) })
			}
		}
		runEach(steps)
	}()
	for ; next < len(takes); next++ {
		bt := &takes[next]
		switch other := bt.Limiter.(type) {
		case *Limiter:
		case nil:
			bt.Decision, bt.Receipt, bt.Err = hotlimit.Decision{}, hotlimit.Receipt{}, errNilLimiter
			bt.GiveBackErr = nil
			if bt.GiveBack.N > 0 {
				bt.GiveBackErr = errNilLimiter
			}
		default:
			bt.Receipt, bt.GiveBackErr = hotlimit.Receipt{}, nil
			if bt.GiveBack.N > 0 {
				bt.GiveBackErr = other.RefundContext(context.WithoutCancel(ctx), bt.Key, bt.GiveBack)
			}
			bt.Decision, bt.Receipt, bt.Err = other.TakeReceiptContext(ctx, bt.Key, bt.N)
		}
	}
}

// Batches makes l a [hotlimit.Batcher]: it reports whether TakeBatch (and
// TakeAll, with l's take first) sends a take of other in one round trip
// with l's own: other is a *Limiter on l's client, with l's timeout, the
// client enforces deadlines (ContextTimeoutEnabled), and neither has a
// lease. A take with a lease is decided by itself, from its lease or by a
// round trip of its own, so a service rule asks it in turn, after the
// limits before it: asked ahead, a request that one of those denies would
// spend from the lease, and a give-back of a leased request is stamped
// with the lease's time, so that it returns less than it took once the
// key has refilled since (see [WithLease]).
func (l *Limiter) Batches(other hotlimit.ContextRefunder) bool {
	o, ok := other.(*Limiter)
	return ok && o != nil && l.leases == nil && o.leases == nil && l.batch.enforced &&
		o.client == l.client && o.set.timeout == l.set.timeout
}

// runAll runs the ops of c, script calls on l's client, under l's timeout,
// in one round trip: in the next batch of l while other calls of l are
// under way, else in a pipeline of its own on the calling goroutine (l's
// client enforces deadlines). On nil, every op holds its reply or error;
// else every op failed with the error returned (ctx ended, or the timeout
// passed), and c is no longer the caller's (see batcher.wait).
func (l *Limiter) runAll(ctx context.Context, c *call) error {
	bounded, cancel := l.batch.deadline(ctx)
	defer cancel()
	if l.batch.max > 0 {
		defer l.inflight.Add(-1)
		if l.inflight.Add(1) > 1 {
			if err := l.batch.wait(bounded, c); !errors.Is(err, errStopped) {
				return err
			}
		}
	}
	batch := [1]*call{c}
	// Most batches are a request's few limits: cmds holds theirs. A
	// NOSCRIPT retry has a timeout of its own, as runOne's.
	var cmds [8]*redis.Cmd
	l.batch.pipeline(bounded, ctx, batch[:], cmds[:0])
	return nil
}

var errNilLimiter = fmt.Errorf("redislimit: a Take without a Limiter: %w", hotlimit.ErrInvalidConfig)

// verdicts gathers how the script calls of one round trip did, for each
// breaker of their nodes: a round trip that fails is one failure of its
// node, however many calls it carried (the takes of a TakeAll), so that a
// breaker opens after its threshold of failed round trips, not after a
// threshold of takes that failed together. A breaker hears of success when
// Redis answered any of its calls (see Limiter.observe), else of its first
// call's error. Each breaker belongs to one Limiter, whose observe tells it.
type verdicts struct {
	n     int
	first [4]verdict // the first n, or 4 of them: most round trips reach few breakers
	more  []verdict
}

// verdict is how the calls of one round trip for the node of breaker did,
// as lim tells it.
type verdict struct {
	breaker *breaker
	lim     *Limiter
	err     error
}

// at returns the i-th verdict.
func (v *verdicts) at(i int) *verdict {
	if i < len(v.first) {
		return &v.first[i]
	}
	return &v.more[i-len(v.first)]
}

// add notes that a call of l for a key of b's node ended with err.
func (v *verdicts) add(l *Limiter, b *breaker, err error) {
	for i := range v.n {
		if seen := v.at(i); seen.breaker == b {
			if redisAnswered(err) {
				seen.err = nil
			}
			return
		}
	}
	if v.n < len(v.first) {
		v.first[v.n] = verdict{b, l, err}
	} else {
		v.more = append(v.more, verdict{b, l, err})
	}
	v.n++
}

// tell tells each breaker, once, how its calls did.
func (v *verdicts) tell(ctx context.Context) {
	for i := range v.n {
		w := v.at(i)
		w.lim.observe(ctx, w.breaker, w.err)
	}
}

// redisAnswered reports whether err, a call's outcome, says that Redis answered
// it: no error, or the error of a key of another type, which is the key's.
func redisAnswered(err error) bool {
	return err == nil || isWrongType(err)
}

// lookupFailures holds, by client, the errors of the lookups of a key's
// cluster master (see Limiter.breakerFor) that failed during one TakeAll: a
// cluster that cannot be asked for its slot map fails each lookup only
// after the timeout, so the later takes of limiters on that client fail
// with the same error rather than ask again, one after the other, and the
// breaker that guards the lookups of each of their limiters counts one
// failure, as for one failed round trip, not one per take.
type lookupFailures struct {
	clients []redis.UniversalClient
	errs    []error
	told    []*Limiter // whose breaker heard of the failure
}

// add notes that the lookup for a take of l failed with err; ahead: the
// take was asked ahead, and the lookup did not tell l's breaker (see
// Limiter.breakerOf). An open breaker's refusal asked nothing, and is not
// noted.
func (f *lookupFailures) add(l *Limiter, err error, ahead bool) {
	if l.nodes == nil || errors.Is(err, ErrBreakerOpen) {
		return
	}
	f.clients, f.errs = append(f.clients, l.client), append(f.errs, err)
	if !ahead {
		f.told = append(f.told, l)
	}
}

// failed returns the error of a lookup that failed on l's client during
// the TakeAll, telling l's breaker of it once (unless ctx ended, as
// breakerFor, or the take is asked ahead, whose turn tells it), or nil
// when none did.
func (f *lookupFailures) failed(ctx context.Context, l *Limiter, ahead bool) error {
	if l.nodes == nil {
		return nil
	}
	for i, c := range f.clients {
		if c != l.client {
			continue
		}
		if !ahead && !slices.Contains(f.told, l) {
			f.told = append(f.told, l)
			if !ended(ctx) {
				l.breaker.failure()
			}
		}
		return f.errs[i]
	}
	return nil
}
