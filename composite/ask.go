package composite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// Asker asks one limiter how long a request of n must wait before that
// limiter admits it, after another limiter denied the request, leaving
// nothing counted in it: a composite asks so each child after the one that
// denied (see RetryAfter in the package documentation), and a
// service.Service rule of several limits each of its limits after the one
// that denied. Make it with NewAsker, once per limiter; it is safe for
// concurrent use when its limiter is. The zero Asker asks nothing, and
// waits nothing.
type Asker struct {
	r hotlimit.Refunder
	// cc is r when it takes a context, else nil: asked under the caller's
	// context, when there is one.
	cc hotlimit.ContextRefunder
	// tells is r when it is slidinglog's, which tells a Take's wait
	// without making it (slidinglog.Limiter.RetryAfter), else nil. Only
	// that very type: another limiter with a method of that name and
	// signature, such as a caller's own that embeds a slidinglog.Limiter and
	// keys its requests its own way, is asked by its Take, as any limiter
	// is, since its RetryAfter need not speak of the requests its Take
	// counts.
	tells *slidinglog.Limiter
	// sub is r when it is a composite, else nil: asked with receipts of
	// its own for its children (see Limiter.take).
	sub *Limiter
	// log is set when r is a sliding log or a composite holding one (see
	// isLog), or its caller knows it is one.
	log bool
	// remote is UsesContext(r): not asked once the caller's context has
	// ended (see Ask).
	remote bool
}

// NewAsker returns the Asker of r. log says that r enforces a sliding log
// although it does not say so itself (a factory's wrapper, known by the
// Config it was built for); r is one anyway when it is slidinglog's, reports
// its Config as one (as redislimit's limiters do), or is a composite holding
// one, to any depth. A nil r, or a nil pointer (see New), gives the zero
// Asker.
func NewAsker(r hotlimit.Refunder, log bool) Asker {
	if nilness.Is(r) {
		return Asker{}
	}
	a := Asker{r: r, log: log || isLog(r), remote: UsesContext(r)}
	a.cc, _ = r.(hotlimit.ContextRefunder)
	a.tells, _ = r.(*slidinglog.Limiter)
	a.sub, _ = r.(*Limiter)
	return a
}

// Ask returns how long a request of n from key must wait before the
// limiter admits it, if nothing else is taken meanwhile, 0 when it admits it
// now; and the limiter's error, when it could not tell (its failure policy
// answered, not its quota: the wait is then 0) or could not give back what
// the question took. n < 1 asks nothing and waits nothing. A nil ctx asks
// without a context, as Take asks the limiters that take one.
//
// Once ctx has ended (canceled, or past its deadline, though its timer may
// not have run yet), a limiter that decides with a context (see
// UsesContext) is not asked: it could only fail, and its failure policy
// would answer in place of its quota (redislimit's FailLocal taking the
// requests from its local limiter, with no receipt to give them back by);
// the wait is 0, and the error wraps ctx.Err() (context.DeadlineExceeded
// past the deadline). Ask gives back only what a
// limiter's receipt says it took, so a failure policy that counts what it
// admits without a receipt (FailLocal, while Redis fails) keeps the
// question counted: a composite, and a service.Service rule, ask a limiter
// for its wait only when its report just before did not fail. It is asked:
//
//   - slidinglog's, by its RetryAfter, which counts nothing; a composite
//     holding a sliding log, child by child, each child that reports less
//     than n asked as here. A sliding log is not asked by a Take: a Take of
//     several can count some of them and deny, under concurrent requests
//     (see hotlimit.Limiter), and one given back marks the log's oldest
//     counted request refunded, not the new one (see
//     slidinglog.Limiter.Refund), holding a request of a call that was
//     denied for a window.
//   - Any other sliding log (redislimit's), by a Take for one request, and
//     not at all for several: it waits nothing then, and may deny the
//     request again after the wait of the others.
//   - Any other limiter, by a Take of the n requests, under ctx when it
//     takes a context and ctx is not nil: a denial takes nothing and gives
//     its RetryAfter; a limiter that admits them (its state changed since
//     it was known to deny, under concurrent requests) gives them back at
//     once with its own receipt, under ctx without its cancellation, and
//     waits nothing. A composite gives each of its children back with its
//     own.
func (a Asker) Ask(ctx context.Context, key string, n int) (time.Duration, error) {
	if a.sub != nil && a.sub.width <= MaxChildren {
		var leaves [MaxChildren]hotlimit.Receipt
		return a.ask(ctx, key, n, leaves[:a.sub.width])
	}
	var leaves []hotlimit.Receipt
	if a.sub != nil {
		leaves = make([]hotlimit.Receipt, a.sub.width)
	}
	return a.ask(ctx, key, n, leaves)
}

// ask is Ask, which asks a composite with leaves, of its width, for the
// receipts of its children (see Limiter.take), and marks them given back.
func (a Asker) ask(ctx context.Context, key string, n int, leaves []hotlimit.Receipt) (time.Duration, error) {
	var cd hotlimit.Decision
	var err error
	var errs []error // of the give-back
	switch {
	case a.r == nil || n < 1:
		return 0, nil // the zero Asker, or nothing to ask
	case a.remote && ctxend.Err(ctx) != nil:
		return 0, fmt.Errorf("composite: not asked for its wait, the request has ended: %w", ctxend.Err(ctx))
	case a.tells != nil:
		return a.tells.RetryAfter(key, n), nil
	case a.sub != nil && a.log:
		w, asked := a.sub.ask(ctx, key, n, leaves, nil)
		return w, errors.Join(asked...)
	case n > 1 && a.log:
		return 0, nil
	case a.sub != nil:
		cd, _, err = a.sub.take(ctx, key, n, leaves)
		if cd.Allowed {
			errs = a.sub.giveBack(detached(ctx), key, len(a.sub.children), leaves, errs, false, nil)
		}
		markGivenBack(leaves)
	case ctx != nil && a.cc != nil:
		var r hotlimit.Receipt
		cd, r, err = a.cc.TakeReceiptContext(ctx, key, n)
		if cd.Allowed {
			if err := a.cc.RefundContext(detached(ctx), key, r); err != nil {
				errs = append(errs, err)
			}
		}
	default:
		var r hotlimit.Receipt
		cd, r = a.r.TakeReceipt(key, n)
		if cd.Allowed {
			a.r.Refund(key, r)
		}
	}
	switch {
	case err != nil:
		// Its failure policy answered, not its quota: no wait.
		return 0, joinErr(err, errs)
	case cd.Allowed:
		return 0, joinErr(nil, errs)
	}
	return cd.RetryAfter, nil
}

// joinErr returns err joined with errs, allocating nothing when there is
// at most one error: that one itself, or nil.
func joinErr(err error, errs []error) error {
	switch {
	case len(errs) == 0:
		return err
	case err == nil && len(errs) == 1:
		return errs[0]
	}
	return errors.Join(append([]error{err}, errs...)...)
}

// ask returns how long the request of n waits until every child admits it,
// with errs and the errors of the children it asks, beside the decision:
// each child reports its state, and those that report less than n are
// asked as wait asks the children after a denier, so that nothing stays
// counted. A composite holding this one asks it so, in place of a Take,
// when it holds a sliding log (see Asker.Ask). leaves is this composite's
// share of the receipts its caller keeps (see take), which the questions
// of nested composites use and mark given back.
func (l *Limiter) ask(ctx context.Context, key string, n int, leaves []hotlimit.Receipt, errs []error) (time.Duration, []error) {
	var rem [MaxChildren]int
	l.report(ctx, key, 0, -1, hotlimit.Decision{}, &errs, false, &rem, nil)
	return l.wait(ctx, key, n, -1, 0, &rem, leaves, errs)
}
