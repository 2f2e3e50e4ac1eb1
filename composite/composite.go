package composite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/hotlimit/hotlimit/internal/reportbatch"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/unlimited"
)

// MaxChildren is the most children a composite takes. It bounds the receipts
// a Take keeps on its stack while it asks the children in turn.
const MaxChildren = 16

// A reportbatch.Set tells every child apart.
var _ [reportbatch.Max - MaxChildren]struct{}

// Limiter admits a request only when every child admits it; see the package
// documentation. Build it with New. The zero Limiter has no child, and
// admits nothing: Allow is false, Take of n ≥ 1 or n < 0 is denied with
// RetryAfter hotlimit.Never, Take of 0 reports Remaining 0, and it holds no
// key. A nil *Limiter is not usable: its methods panic, as methods on a nil
// pointer do. It is safe for concurrent use.
//
// The children that can be asked together (those the first
// [hotlimit.Batcher] among them sends in one round trip with its own, as
// redislimit's limiters on one client without a lease are), when two or
// more other than sliding logs can, are asked together, in one go, when a
// take reaches the first of them, not in a round trip each. A
// child before that first one that denies leaves them all unasked; when a
// child denies after it (one of them, or another between them), every one
// of them that took the request gives it back, those after the denier
// included, as the children before the denier do; so too when a child
// panics in its Take. A sliding log is asked in its place, on its own, so
// that a denial by a child before it never refunds it. Take and
// TakeReceipt ask the batch under context.Background, dropping its errors
// as they drop a child's. A composite child asks its own children so, on
// its own.
type Limiter struct {
	children []hotlimit.Refunder
	// withContext[i] is children[i] when it takes a context
	// (hotlimit.ContextRefunder: redislimit's limiters, a composite), else
	// nil. The methods that take a context ask those children under it.
	withContext []hotlimit.ContextRefunder
	// remote[i] is UsesContext(children[i]): set when children[i] takes a
	// context and is not a composite, or is a composite holding one (to
	// any depth): it may fail once the caller's context has ended (see
	// wait). A composite of in-memory limiters takes a context, but never
	// fails.
	remote []bool
	// stateless[i] is set when children[i] keeps no state: an unlimited
	// limiter, or a composite of such children (to any depth). Its receipt
	// holds no clock reading, and its refund does nothing.
	stateless []bool
	// isLog[i] is set when children[i] is a sliding log (see isLog), or a
	// composite holding one (to any depth), which a denial asks for its
	// wait without a Take where it can (see Asker.Ask).
	isLog []bool
	// asks[i] asks children[i] for its wait after a denial (see wait).
	asks []Asker
	// most is the least of the children's hotlimit.Burster bursts
	// (math.MaxInt for a child that does not say): a Take of more is
	// denied with RetryAfter hotlimit.Never before any child is asked for
	// it.
	most int
	// sub[i] is children[i] when it is a composite, else nil. A take asks
	// it through take, which keeps the receipts of its own children, so
	// that a give-back refunds each of them with its own (see giveBack),
	// as if they were the children of this composite: its own receipt,
	// the zero Receipt when one of them counted nothing, or the earliest
	// of their times, would give some of them back less.
	sub []*Limiter
	// off[i] is where children[i]'s receipts start among the receipts a
	// take keeps (see take): one for a child, the width of a composite
	// child's. width is their number: the composite's leaves.
	off   []int
	width int
	// batched has bit i set when children[i] is asked together with the
	// others set, in one go by batcher, when a take reaches the first of
	// them (see prefetch): a hotlimit.Batcher, such as redislimit's
	// Limiter, that is not a sliding log. It is 0, and batcher nil, when
	// fewer than two children are. batchedEnd is one past the last of
	// them.
	batched    uint32
	batcher    hotlimit.Batcher
	batchedEnd int
}

// givenBack is the N of the receipts that take leaves in place of those it
// gave back itself, when it denied or when the request ended: giveBack
// skips them, so that a composite holding this one gives none twice.
const givenBack = -1

var (
	_ hotlimit.Refunder        = (*Limiter)(nil)
	_ hotlimit.Burster         = (*Limiter)(nil)
	_ hotlimit.ContextTaker    = (*Limiter)(nil)
	_ hotlimit.ContextRefunder = (*Limiter)(nil)
)

// New returns a composite of children, asked in the order given (put the
// child that denies most often first: a denial refunds the children before
// it). There must be between 1 and MaxChildren children, none nil (nor a nil
// pointer such as a (*tokenbucket.Limiter)(nil), nor a nil function, map
// or channel of a limiter type; a nil slice is an empty one to its
// methods, and a child), none given twice, nor
// held twice through composites among the children (it would count every
// request twice, and deny for ever a request of more than half its burst
// while telling to retry; children that cannot be compared, see same, are
// not checked), and each must implement
// hotlimit.Refunder; otherwise New returns an error that says which child and
// wraps hotlimit.ErrInvalidConfig.
func New(children ...hotlimit.Limiter) (*Limiter, error) {
	if len(children) == 0 || len(children) > MaxChildren {
		return nil, fmt.Errorf("composite: %d children out of range [1, %d]: %w", len(children), MaxChildren, hotlimit.ErrInvalidConfig)
	}
	l := &Limiter{
		children:    make([]hotlimit.Refunder, len(children)),
		withContext: make([]hotlimit.ContextRefunder, len(children)),
		remote:      make([]bool, len(children)),
		stateless:   make([]bool, len(children)),
		isLog:       make([]bool, len(children)),
		asks:        make([]Asker, len(children)),
		most:        math.MaxInt,
		sub:         make([]*Limiter, len(children)),
		off:         make([]int, len(children)),
	}
	for i, c := range children {
		if nilness.Is(c) {
			return nil, fmt.Errorf("composite: child %d is nil: %w", i, hotlimit.ErrInvalidConfig)
		}
		for j, d := range children[:i] {
			if shares(c, d) {
				return nil, fmt.Errorf("composite: child %d is child %d again, or holds a limiter it holds: it would count every request twice: %w", i, j, hotlimit.ErrInvalidConfig)
			}
		}
		r, ok := c.(hotlimit.Refunder)
		if !ok {
			return nil, fmt.Errorf("composite: child %d (%T) is not a hotlimit.Refunder: it could not give back what it took when another child denies: %w",
				i, c, hotlimit.ErrInvalidConfig)
		}
		l.children[i], l.stateless[i], l.isLog[i] = r, isStateless(r), isLog(r)
		l.withContext[i], _ = c.(hotlimit.ContextRefunder)
		l.asks[i] = NewAsker(r, false)
		l.remote[i] = UsesContext(c)
		if b, ok := c.(hotlimit.Burster); ok {
			l.most = min(l.most, b.Burst())
		}
		l.off[i] = l.width
		if cl, ok := c.(*Limiter); ok {
			l.sub[i] = cl
			l.width += cl.width
		} else {
			l.width++
		}
	}
	// The batcher is the first child that can be asked with others, and
	// the batch the children it sends in one round trip with its own (see
	// hotlimit.Batcher.Batches): a child it would decide by itself
	// (redislimit's with a lease, or on another client) saves nothing
	// asked ahead, and is asked in its place. Sliding logs are left out
	// of the batch: a take reaching one asks it on its own, so that a
	// denial by a child before it never refunds it (see
	// slidinglog.Limiter.Refund).
	for i, c := range l.children {
		if b, ok := c.(hotlimit.Batcher); ok && !l.isLog[i] && b.Batches(b) {
			l.batcher = b
			break
		}
	}
	for i := range l.children {
		if l.batcher != nil && !l.isLog[i] && l.withContext[i] != nil && l.batcher.Batches(l.withContext[i]) {
			l.batched |= 1 << i
			l.batchedEnd = i + 1
		}
	}
	if bits.OnesCount32(l.batched) < 2 {
		l.batched, l.batcher, l.batchedEnd = 0, nil, 0
	}
	return l, nil
}

// UsesContext reports whether l decides with the context it is asked
// under, and so may fail to decide once that context has ended: a
// limiter that takes one (hotlimit.ContextRefunder), such as redislimit's,
// other than a composite, or a composite holding one among its children,
// to any depth. A composite of in-memory limiters takes a context only to
// pass it on: it decides in memory whatever the context, and never fails.
//
// Once the caller's context has ended, a composite, and a service.Service
// rule of several limits, asks a limit that would deny a request after the
// one that denied it for its wait (see RetryAfter in the package
// documentation) only when UsesContext reports false of it: one that uses
// the context could only fail, its failure policy answering in place of
// its quota. It reports false of nil, and of a nil *Limiter.
func UsesContext(l hotlimit.Limiter) bool {
	if cl, ok := l.(*Limiter); ok {
		return cl != nil && slices.Contains(cl.remote, true)
	}
	_, ok := l.(hotlimit.ContextRefunder)
	return ok
}

// isStateless reports whether c keeps no state: an unlimited limiter, or a
// composite whose children all keep none.
func isStateless(c hotlimit.Refunder) bool {
	switch c := c.(type) {
	case *unlimited.Limiter:
		return true
	case *Limiter:
		return !slices.Contains(c.stateless, false)
	}
	return false
}

// isLog reports whether c is a sliding log: slidinglog's, one that reports
// its Config as one (as redislimit's limiters do), or a composite holding
// one, to any depth. slidinglog's Take of n > 1 can be denied with some of
// its requests counted, under concurrent requests on the key (see
// hotlimit.Limiter), so a Take that is only a question (see Asker.Ask)
// must not ask one for more than one request: slidinglog's tells its wait
// without a Take (slidinglog.Limiter.RetryAfter), for any n, and a
// composite holding one is asked child by child. A service.Service rule of
// several limits tells its sliding logs so too.
func isLog(c hotlimit.Limiter) bool {
	switch c := c.(type) {
	case *slidinglog.Limiter:
		return true
	case *Limiter:
		return slices.Contains(c.isLog, true)
	case interface{ Config() hotlimit.Config }:
		return c.Config().Algorithm == hotlimit.SlidingLog
	}
	return false
}

// shares reports whether a and b are one limiter, or composites (nested to
// any depth) of which one holds the other or both hold one limiter.
func shares(a, b hotlimit.Limiter) bool {
	for _, x := range leaves(a, nil) {
		for _, y := range leaves(b, nil) {
			if same(x, y) {
				return true
			}
		}
	}
	return false
}

// leaves appends to dst c, and the children of c when c is a composite,
// recursively.
func leaves(c hotlimit.Limiter, dst []hotlimit.Limiter) []hotlimit.Limiter {
	dst = append(dst, c)
	if cl, ok := c.(*Limiter); ok {
		for _, child := range cl.children {
			dst = leaves(child, dst)
		}
	}
	return dst
}

// same reports whether a and b are one limiter. Values that cannot be
// compared are never the same: of a type that is not comparable, or of a
// comparable type that holds, behind an interface field, a value that is not
// (a func, such as a hotlimit.ObserverFunc), on which == panics at run time.
// Neither are those without state, of zero size or pointing to zero size
// (unlimited.New's): distinct ones may compare equal, and counting twice in
// them changes nothing.
func same(a, b hotlimit.Limiter) bool {
	t := reflect.TypeOf(a)
	if t != reflect.TypeOf(b) || !t.Comparable() || t.Size() == 0 || t.Kind() == reflect.Pointer && t.Elem().Size() == 0 {
		return false
	}
	// The type is comparable; the values may still hold one that is not
	// behind an interface field. reflect's Comparable checks the dynamic
	// values, and says == cannot panic when it reports true.
	if !reflect.ValueOf(a).Comparable() || !reflect.ValueOf(b).Comparable() {
		return false
	}
	return a == b
}

// Allow reports whether one request from key passes every child, and counts
// it in all of them if so. It is Take(key, 1).Allowed.
func (l *Limiter) Allow(key string) bool {
	d, _ := l.TakeReceipt(key, 1)
	return d.Allowed
}

// Burst returns the most requests one Take passes at once: the least of
// its children's bursts, of those that say theirs (hotlimit.Burster; every
// limiter of this module does). A Take of more is denied with RetryAfter
// hotlimit.Never, without asking any child for it.
func (l *Limiter) Burst() int { return l.most }

// Take asks every child for n requests from key at once: all pass and stay
// counted in every child, or none does and no child keeps any. Take(key, 0)
// reports without changing anything; n < 0 is denied with RetryAfter
// hotlimit.Never. The package documentation defines the Decision.
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.TakeReceipt(key, n)
	return d
}

// TakeReceipt is Take, plus the receipt of what it took: n requests at the
// earliest of the children's receipt times (a child that keeps no state, an
// unlimited one, gives no time); the zero Receipt when denied or n < 1, and
// also when a child that keeps state admitted without counting (its zero
// Receipt, as redislimit's failure policies give while Redis is down): no
// time of a receipt could then keep that child from being given back what it
// never counted. Give them back with Refund.
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	//lint:ignore SA1012 nil: decided without a context, as TakeReceipt is
	d, r, _ := l.takeReceipt(nil, key, n)
	return d, r
}

// TakeContext is Take under ctx: the children that take a context
// (hotlimit.ContextTaker: redislimit's limiters, a composite of them) are
// asked under it, so that its deadline bounds their round trips, and the
// error joins theirs; see TakeReceiptContext. A ctx of nil is
// context.Background().
func (l *Limiter) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	if ctx == nil {
		ctx = context.Background() // nil is takeReceipt's "no context": Take's
	}
	d, _, err := l.takeReceipt(ctx, key, n)
	return d, err
}

// TakeReceiptContext is TakeReceipt under ctx. The children that take a
// context (hotlimit.ContextRefunder) are asked under it, and, when another
// child denies, give back under it without its cancellation, so that a
// denial gives back what it can even while the request is being cancelled.
// The other children are asked as TakeReceipt asks them. The error joins
// the children's: a child that could not decide (ctx ended, its backend
// failed) made its failure policy's decision instead, which the composite
// uses as any other.
//
// When ctx has ended by the time every child admitted the request and some
// child could not decide (so its failure policy passed the request without
// counting it), every child gives back what it took, as on a denial: the
// request has ended, will not be served, and so counts nowhere. The
// Decision then still reads Allowed, the receipt is the zero Receipt, and
// the error says so and wraps ctx.Err(), as a service rule of several limits
// does (see service.Service.TakeContext); hotlimit.WaitN reads such a pass
// as no pass. A ctx whose deadline has passed has ended, though its timer
// may not have run yet (a backend that sets the deadline on its socket can
// fail at it first): the error then wraps context.DeadlineExceeded. A child that is itself a composite gives back as its children
// would side by side: each with its own receipt, even when one of them
// counted nothing and its own receipt is the zero Receipt.
//
// A ctx of nil is context.Background().
func (l *Limiter) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return l.takeReceipt(ctx, key, n)
}

// takeReceipt is TakeReceipt, under ctx when ctx is not nil (see
// TakeReceiptContext).
func (l *Limiter) takeReceipt(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if l.width <= MaxChildren {
		var leaves [MaxChildren]hotlimit.Receipt
		return l.take(ctx, key, n, leaves[:l.width])
	}
	return l.take(ctx, key, n, make([]hotlimit.Receipt, l.width))
}

// take is takeReceipt, which also sets leaves, of length l.width, to the
// receipts of the composite's leaves: of each child, and of the children of
// a composite child, to any depth, in order (see off), so that a composite
// holding this one can give each of them back with its own (see giveBack).
// When take gives back what they took itself (on a denial, or when the
// request ended), it sets them to receipts that giveBack skips.
func (l *Limiter) take(ctx context.Context, key string, n int, leaves []hotlimit.Receipt) (hotlimit.Decision, hotlimit.Receipt, error) {
	var errs []error
	if n < 1 {
		d := l.report(ctx, key, n, -1, hotlimit.Decision{}, &errs, true, nil, nil)
		if n < 0 {
			// The children deny it; the zero Limiter has none to.
			d.Allowed, d.RetryAfter = false, hotlimit.Never
		}
		return d, hotlimit.Receipt{}, errors.Join(errs...)
	}
	if n > l.most {
		// Some child can never pass n: asking the children before it
		// would take and refund, and one of them might deny first with a
		// RetryAfter after which the request still could not pass. The
		// composite denies it, not a child: their errors are beside it.
		d := l.report(ctx, key, 0, -1, hotlimit.Decision{}, &errs, false, nil, nil)
		d.Allowed, d.RetryAfter = false, hotlimit.Never
		return d, hotlimit.Receipt{}, errors.Join(errs...)
	}
	var d hotlimit.Decision
	failed := false // some child could not decide: its failure policy did
	// The receipt's time (see the package documentation): the earliest of
	// the children's, leaving out the children that keep no state
	// (stateless), whose receipt holds no reading of the clock (as the
	// earliest time it would make every other child give back less).
	// uncounted is set when a child that keeps state gave the zero
	// Receipt: it admitted without counting, as redislimit's failure
	// policies do while Redis is down, and must not be given back what it
	// never counted. No time can say so: a receipt at any time gives back
	// something to a limiter whose clock reads near it (a refund at a time
	// before a limiter's epoch counts from its epoch, and a clock may read
	// 0, or less, as a fake one starting at 0 does), so the composite then
	// gives no receipt at all.
	var at int64
	found, uncounted := false, false
	// held is how many children, from the first, may hold what they took
	// by their receipts among leaves (up to the last of the batch once it
	// was asked, see batch below). Should a child panic in its Take (a
	// user's clock, a limiter of the caller's own), those are given back
	// on the way out, and the panic goes on unchanged: a request that was
	// never decided counts nowhere (a composite child that panics gives
	// back its own children so). Once every child has been asked, or one
	// denied and the others' give-back starts, held is 0: the deferred
	// call then does nothing, and nothing is given back twice.
	held := 0
	defer func() {
		if held > 0 {
			// Marked given back even when a refund panics, so that a
			// composite holding this one, whose own give-back may reach
			// it (a child of its batch after this one took), gives
			// nothing back twice.
			defer markGivenBack(leaves)
			l.giveBack(detached(ctx), key, held, leaves, nil, false, nil)
		}
	}()
	// The children that can be asked together (see batched) are asked in
	// one go (one round trip to Redis) when the loop reaches the first of
	// them. batch then holds their takes, in the children's order (next
	// is the index in it of the next one the loop reaches), and leaves
	// their receipts. Those that took the request hold it as the children
	// before a denier do, and are given back with them, those after the
	// denier too: a give-back then reaches up to batchedUpTo, one past
	// the last of them.
	var batch []hotlimit.BatchTake
	next, batchedUpTo := 0, 0
	for i, c := range l.children {
		var cd hotlimit.Decision
		var r hotlimit.Receipt
		var err error
		decided := false // by the batch
		if l.batched&(1<<i) != 0 {
			if batch == nil {
				batch = l.prefetch(ctx, key, n, leaves)
				batchedUpTo = l.batchedEnd
				held = batchedUpTo
			}
			t := &batch[next]
			next++
			// One its limiter could not decide ahead is asked in its
			// place, by its failure policy (see hotlimit.BatchTake.Ahead).
			if decided = !errors.Is(t.Err, hotlimit.ErrNotDecided); decided {
				cd, r, err = t.Decision, t.Receipt, t.Err
				if ctx == nil {
					err = nil // as TakeReceipt's, below
				}
			}
		}
		switch cc := l.withContext[i]; {
		case decided:
		case l.sub[i] != nil:
			sub := l.sub[i]
			cd, r, err = sub.take(ctx, key, n, leaves[l.off[i]:l.off[i]+sub.width])
		case ctx != nil && cc != nil:
			cd, r, err = cc.TakeReceiptContext(ctx, key, n)
			leaves[l.off[i]] = r
		default:
			cd, r = c.TakeReceipt(key, n)
			leaves[l.off[i]] = r
		}
		if !cd.Allowed {
			// The denier decided: the failures of the children before
			// it, whose failure policies passed, are beside the denial,
			// as are those of the give-back and the report below.
			for k := range errs {
				errs[k] = &besideError{errs[k]}
			}
			if err != nil {
				errs = append(errs, err)
			}
			// Give back what the children before it took, in reverse
			// order, each with its own receipt: right after its Take, a
			// refund restores the child (see the package documentation);
			// and those of the batch after it (up to batchedUpTo). The
			// denier, which took nothing, is left out. Those of the batch
			// give back and report in one go (see askReports).
			if l.sub[i] == nil {
				leaves[l.off[i]] = hotlimit.Receipt{N: givenBack}
			}
			var asked reportbatch.Set
			l.askReports(ctx, key, 0, i, leaves, &asked)
			held = 0
			errs = l.giveBack(detached(ctx), key, max(i, batchedUpTo), leaves, errs, true, &asked)
			markGivenBack(leaves)
			// The others as they are now: the refunded ones restored,
			// the later ones reporting, not taking; the denier's own
			// decision in its place, so that a tie goes to the first
			// child. Then the wait until every child admits the
			// request: the denier's, or that of a later child that
			// would deny it too.
			var rem [MaxChildren]int
			rd := l.report(ctx, key, 0, i, cd, &errs, false, &rem, &asked)
			rd.Allowed = false
			rd.RetryAfter, errs = l.wait(ctx, key, n, i, cd.RetryAfter, &rem, leaves, errs)
			return rd, hotlimit.Receipt{}, errors.Join(errs...)
		}
		held = max(held, i+1)
		if err != nil {
			errs, failed = append(errs, err), true
		}
		if !l.stateless[i] {
			if r.N < 1 {
				uncounted = true
			} else if !found || r.At < at {
				at, found = r.At, true
			}
		}
		d = merge(d, cd, i == 0)
	}
	held = 0 // every child was asked: the request is decided
	d.Allowed, d.RetryAfter = true, 0
	var ended error // without a context, no child fails
	if failed {
		ended = ctxend.Err(ctx)
	}
	if ended != nil {
		// The request ended while a child could not decide, which passed
		// it by its failure policy, counting nothing: its caller will not
		// serve it, so the children that counted it give it back too. A
		// failed child's receipt is given back as well: the zero Receipt,
		// a no-op, unless that child counted after all.
		errs = l.giveBack(detached(ctx), key, len(l.children), leaves, errs, false, nil)
		markGivenBack(leaves)
		errs = append(errs, fmt.Errorf("composite: the request ended while a child could not decide, and was given back: %w", ended))
		return d, hotlimit.Receipt{}, errors.Join(errs...)
	}
	if uncounted {
		return d, hotlimit.Receipt{}, errors.Join(errs...)
	}
	return d, hotlimit.Receipt{N: n, At: at}, errors.Join(errs...)
}

// prefetch takes n requests from key from every child of l.batched at
// once, by l.batcher, under ctx (context.Background when nil: Take's
// errors are then dropped by the caller, as TakeReceipt drops them), sets
// their receipts among leaves, and returns their takes, in the children's
// order, with each one's Decision, Receipt and Err. It runs in the first
// one's turn: the others are asked ahead of theirs
// (hotlimit.BatchTake.Ahead), the first is not, so that when Redis
// cannot decide it, its failure policy decides it with Redis's error, as
// for the children asked in turn, and its breaker hears of it once.
func (l *Limiter) prefetch(ctx context.Context, key string, n int, leaves []hotlimit.Receipt) []hotlimit.BatchTake {
	if ctx == nil {
		ctx = context.Background()
	}
	takes := make([]hotlimit.BatchTake, 0, bits.OnesCount32(l.batched))
	for i := range l.children {
		if l.batched&(1<<i) != 0 {
			takes = append(takes, hotlimit.BatchTake{Limiter: l.withContext[i], Key: key, N: n, Ahead: len(takes) > 0})
		}
	}
	l.batcher.TakeBatch(ctx, takes)
	j := 0
	for i := range l.children {
		if l.batched&(1<<i) != 0 {
			leaves[l.off[i]] = takes[j].Receipt
			j++
		}
	}
	return takes
}

// wait returns how long the request of n that the denier-th child denied,
// with RetryAfter retry, waits until every child admits it, with errs and
// the errors of the children it asks, beside the decision. The children
// before the denier admitted it, and admit it later too; of those after it,
// rem holds the Remaining of their reports (math.MaxInt for one whose report
// failed), and a child that reports n or more admits it now. Each other one
// is asked for its wait by its Asker, leaving nothing counted (see
// Asker.Ask: slidinglog's by its RetryAfter, a composite holding a sliding
// log child by child, any other sliding log by a Take for one request
// only, any other child by a Take of the n requests, given back at once
// with its own receipt when it admits them, as the give-back of a denial
// does, see take). A child that fails to decide gives no wait: its failure
// policy answered, not its quota. Not asked: a child that keeps no state,
// and every child when the denier's wait is Never already; nor, once ctx
// has ended, a child that takes a context, or a composite holding one (it
// could only fail: a redislimit limiter does not send the question, and its
// failure policy answers it, FailLocal taking it from its local limiter
// with no receipt to give it back by). A composite of in-memory limiters
// only is asked then too: it cannot fail.
//
// Each child admits a request more readily as time passes with no other
// requests, so after the largest of these waits every child admits it:
// the result is the least wait after which the request passes, but for the
// children not asked.
func (l *Limiter) wait(ctx context.Context, key string, n, denier int, retry time.Duration, rem *[MaxChildren]int, leaves []hotlimit.Receipt, errs []error) (time.Duration, []error) {
	for j := denier + 1; j < len(l.children) && retry != hotlimit.Never; j++ {
		if rem[j] >= n || l.stateless[j] {
			continue
		}
		if l.remote[j] && ctxend.Err(ctx) != nil {
			continue // it could only fail: see above
		}
		w, err := l.asks[j].ask(ctx, key, n, l.share(j, leaves))
		retry = max(retry, w)
		if err != nil {
			errs = append(errs, &besideError{err})
		}
	}
	return retry, errs
}

// share returns children[j]'s receipts among leaves, the receipts of the
// composite's leaves (see off): one for a child, a composite child's own
// leaves for it.
func (l *Limiter) share(j int, leaves []hotlimit.Receipt) []hotlimit.Receipt {
	if j+1 < len(l.off) {
		return leaves[l.off[j]:l.off[j+1]]
	}
	return leaves[l.off[j]:l.width]
}

// giveBack refunds, in reverse order, what each of the first upto children
// took, with its own receipt among leaves (see take), a composite child
// each of its own children so, those that take a context under ctx (when
// not nil), which the caller made with detached; it returns errs with
// their errors, beside the decision when beside is set (a denial's
// give-back). Receipts that take marked as given back already are skipped;
// a child that asked (when not nil) holds gave back already: its error is
// appended in its place. Should a child's refund panic, the children
// before it are given back all the same, and then the panic goes on: one
// child failing keeps no other's quota.
func (l *Limiter) giveBack(ctx context.Context, key string, upto int, leaves []hotlimit.Receipt, errs []error, beside bool, asked *reportbatch.Set) []error {
	j := upto - 1
	defer func() {
		if j >= 0 { // the j-th child's refund panicked
			l.giveBack(ctx, key, j, leaves, nil, beside, asked)
		}
	}()
	for ; j >= 0; j-- {
		if sub := l.sub[j]; sub != nil {
			errs = sub.giveBack(ctx, key, len(sub.children), leaves[l.off[j]:l.off[j]+sub.width], errs, beside, nil)
			continue
		}
		if t := asked.Of(j); t != nil {
			if ctx != nil && t.GiveBackErr != nil {
				errs = append(errs, &besideError{t.GiveBackErr}) // only a denial's give-back is asked so
			}
			continue
		}
		r := leaves[l.off[j]]
		if r.N == givenBack {
			continue
		}
		if cc := l.withContext[j]; ctx != nil && cc != nil {
			if err := cc.RefundContext(ctx, key, r); err != nil {
				if beside {
					err = &besideError{err}
				}
				errs = append(errs, err)
			}
		} else {
			l.children[j].Refund(key, r)
		}
	}
	return errs
}

// detached returns ctx without its cancellation, for a give-back that must
// run even while the request is being cancelled: nil for nil, ctx itself
// when it can never be cancelled (its Done is nil, as Background's is),
// which allocates nothing, else context.WithoutCancel(ctx), made once for
// every child a give-back reaches, those of nested composites too.
func detached(ctx context.Context) context.Context {
	if ctx == nil || ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// markGivenBack sets every receipt of leaves to one that giveBack skips:
// take gave them back itself.
func markGivenBack(leaves []hotlimit.Receipt) {
	for i := range leaves {
		leaves[i] = hotlimit.Receipt{N: givenBack}
	}
}

// report asks every child for Take(key, n) with n ≤ 0, which changes
// nothing, but the known-th (none when known < 0), whose decision is given
// as kd, and merges their decisions in the children's order: Allowed if all
// are, the largest RetryAfter. The children that take a context are asked
// under ctx when it is not nil, their errors appended to errs: beside the
// decision (see DecidingError), but, when decides is set and known < 0 (the
// report is the decision), those of the first child that denies, or of
// every child when none does. When rem is not nil, rem[i] is set to the
// i-th child's Remaining, or math.MaxInt when its report failed: one that
// takes a context is then asked under context.Background when ctx is nil
// (its error still left out, as Take returns none), to know that. The
// children of l.batched are asked together (see askReports), unless asked
// is given, which holds their answers already.
func (l *Limiter) report(ctx context.Context, key string, n, known int, kd hotlimit.Decision, errs *[]error, decides bool, rem *[MaxChildren]int, asked *reportbatch.Set) hotlimit.Decision {
	if asked == nil {
		asked = new(reportbatch.Set)
		l.askReports(ctx, key, n, known, nil, asked)
	}
	d := hotlimit.Decision{Allowed: true}
	var errOf [MaxChildren]error
	denier := -1
	for i, c := range l.children {
		cd := kd
		t := asked.Decided(i) // else asked here, in its turn
		switch cc := l.withContext[i]; {
		case i == known:
		case t != nil && (ctx != nil || rem != nil):
			cd, errOf[i] = t.Decision, t.Err
		case t != nil:
			cd = t.Decision // Take's: its failure is not told
		case ctx != nil && cc != nil:
			cd, _, errOf[i] = cc.TakeReceiptContext(ctx, key, n) // n ≤ 0 takes nothing
		case rem != nil && cc != nil:
			// Take's (no context): asked with one all the same, so that
			// its failure, which Take does not return, is known, and it
			// is not asked again for its wait (see wait).
			cd, _, errOf[i] = cc.TakeReceiptContext(context.Background(), key, n)
		default:
			cd = c.Take(key, n)
		}
		if !cd.Allowed && denier < 0 {
			denier = i
		}
		if rem != nil {
			rem[i] = cd.Remaining
			if errOf[i] != nil {
				rem[i] = math.MaxInt
			}
		}
		d = merge(d, cd, i == 0)
		d.Allowed = d.Allowed && cd.Allowed
		d.RetryAfter = max(d.RetryAfter, cd.RetryAfter)
	}
	if ctx == nil {
		return d
	}
	decides = decides && known < 0
	for i, err := range errOf[:len(l.children)] {
		if err == nil {
			continue
		}
		if !decides || denier >= 0 && i != denier {
			err = &besideError{err}
		}
		*errs = append(*errs, err)
	}
	return d
}

// askReports asks every child of l.batched but the skip-th (if any) for
// Take(key, n) with n ≤ 0, which changes nothing, in one go by l.batcher
// (see reportbatch.Set.Ask), each after giving back its receipt among
// leaves (when leaves is not nil, and the receipt is not marked given
// back) in the same round trip: a denial's give-backs and the reports
// after them cost one, as the takes before them did. Those receipts are
// the batcher's then, and marked given back among leaves: should it panic,
// it gave them back (see hotlimit.Batcher.TakeBatch), and a panic's
// give-back of leaves does not give them back twice.
func (l *Limiter) askReports(ctx context.Context, key string, n, skip int, leaves []hotlimit.Receipt, asked *reportbatch.Set) {
	batch := l.batched
	if skip >= 0 {
		batch &^= 1 << skip
	}
	asked.Ask(ctx, l.batcher, batch, n, func(i int) hotlimit.BatchTake {
		t := hotlimit.BatchTake{Limiter: l.withContext[i], Key: key}
		if leaves != nil {
			if r := leaves[l.off[i]]; r.N != givenBack {
				t.GiveBack = r
			}
			leaves[l.off[i]] = hotlimit.Receipt{N: givenBack}
		}
		return t
	})
}

// besideError is the error of a child whose failure did not make the
// composite's decision: a child whose failure policy passed a request
// another child denied, or one asked only for its state or to give back
// on a denial. It reads and unwraps as the child's error.
type besideError struct{ err error }

func (e *besideError) Error() string { return e.err.Error() }
func (e *besideError) Unwrap() error { return e.err }

// DecidingError returns what of err, the error of a composite's
// TakeContext or TakeReceiptContext, comes from the children whose failure
// made the decision: on a denial, the denying child's error (a failure
// policy denied, no quota spent), nil when the denying child decided (a
// quota spent) even if another child failed beside it, to report its
// state or to give back; on a pass, every child's error, and the error
// saying the request ended and was given back. Composites nested in err
// are read so too. Any other error is returned as it is, so that
// DecidingError(err) != nil tells, for any limiter's error, whether the
// limiter could not decide: service.LimitDecision.Err is so.
func DecidingError(err error) error {
	if !hasBeside(err) {
		return err
	}
	if _, ok := err.(*besideError); ok {
		return nil
	}
	var kept []error
	for _, x := range err.(interface{ Unwrap() []error }).Unwrap() {
		if x = DecidingError(x); x != nil {
			kept = append(kept, x)
		}
	}
	return errors.Join(kept...)
}

// hasBeside reports whether err is, or joins (to any depth of joins), a
// besideError.
func hasBeside(err error) bool {
	switch e := err.(type) {
	case *besideError:
		return true
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), hasBeside)
	}
	return false
}

// merge folds a child's decision cd into d, the children's so far (first:
// cd is the first one): Limit and Remaining of the child with the least
// Remaining, the first on a tie, and the largest ResetAfter. Allowed and
// RetryAfter are left to the caller.
func merge(d, cd hotlimit.Decision, first bool) hotlimit.Decision {
	if first || cd.Remaining < d.Remaining {
		d.Limit, d.Remaining = cd.Limit, cd.Remaining
	}
	d.ResetAfter = max(d.ResetAfter, cd.ResetAfter)
	return d
}

// Refund gives r to every child: each gives back what the composite's Take
// took from it, as far as it still counts. r.At is the earliest of the
// children's times, at or before each child's own, and every child's refund
// is monotone in it, so no child ever gives back capacity that was not taken
// (see the package documentation). A zero Receipt gives back nothing.
func (l *Limiter) Refund(key string, r hotlimit.Receipt) {
	if r.N < 1 {
		return
	}
	for _, c := range l.children {
		c.Refund(key, r)
	}
}

// RefundContext is Refund under ctx: the children that take a context
// (hotlimit.ContextRefunder) give back under it, the others as Refund asks
// them. Every child is given r whatever the others answer; the error joins
// theirs. A ctx of nil is context.Background().
func (l *Limiter) RefundContext(ctx context.Context, key string, r hotlimit.Receipt) error {
	if r.N < 1 {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var errs []error
	for i, c := range l.children {
		if cc := l.withContext[i]; cc != nil {
			if err := cc.RefundContext(ctx, key, r); err != nil {
				errs = append(errs, err)
			}
		} else {
			c.Refund(key, r)
		}
	}
	return errors.Join(errs...)
}

// Len returns the keys held by the children that report it (as the
// limiters of this module do), summed over the children.
func (l *Limiter) Len() int {
	n := 0
	for _, c := range l.children {
		if c, ok := c.(interface{ Len() int }); ok {
			n += c.Len()
		}
	}
	return n
}

// Sweep sweeps every child that can be swept (as the limiters of this module
// can), and returns how many keys they evicted in all.
func (l *Limiter) Sweep() int {
	n := 0
	for _, c := range l.children {
		if c, ok := c.(interface{ Sweep() int }); ok {
			n += c.Sweep()
		}
	}
	return n
}
