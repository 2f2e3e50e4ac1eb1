package service

import (
	"context"
	"errors"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
)

// Receipt records what one [Service.TakeReceipt] took, limit by limit, so
// that [Service.Refund] can give it back: a request that passed and was
// then not served (its backend failed) need not count against the user.
//
// It holds the rule that decided the request (the one of the rules in
// force when it was taken, with its limiters: a refund after a Replace goes
// to the limiters that took, never to ones built since, which took
// nothing), the user and api (each limit's key is built again from them and
// the limit's scope), and each limit's own [hotlimit.Receipt]: the zero one
// for a limit that took nothing (in shadow mode and would have denied, a
// rule of [hotlimit.Unlimited], or a limit whose failure policy passed the
// request without asking its quota, as redislimit's FailOpen does, and its
// FailLocal, whose in-process count a refund does not reach: see
// [Service.TakeReceiptContext]).
//
// The zero Receipt gives back nothing: a denied request, a request of n < 1
// and one that took from no limit get it, and compare equal to Receipt{}.
// A Receipt is a plain value: it allocates nothing, and may be kept,
// copied and compared. It keeps the rule it names, and that rule's
// limiters, from being collected while it is held.
type Receipt struct {
	ru        *rule // nil: nothing was taken
	user, api string
	// taken[i] is what the i-th limit took: of the rule's multi, in its
	// order (multi.children), or taken[0] for a rule of one limit.
	taken [composite.MaxChildren]hotlimit.Receipt
}

// TakeReceipt is [Service.Take], plus the receipt of what it took, for
// [Service.Refund]: the decision is Take's, and the observer and the shadow
// hook hear of it as they do of Take's. A denied request gets the zero
// Receipt: every limit of its rule already gave back what it took. So does
// a rule whose limiter of one limit is not a [hotlimit.Refunder] (a
// factory's that cannot give back: every limit of a rule of several is
// one), which is then decided as Take decides it. With the in-memory limiters,
// a request of a pair seen before allocates nothing.
func (s *Service) TakeReceipt(user, api string, n int) (hotlimit.Decision, Receipt) {
	var r Receipt
	//lint:ignore SA1012 nil: decided without a context, as Take is
	d, _ := s.rules.Load().resolve(user, api).takeReceipt(nil, s.keys, user, api, n, &r)
	return d, r
}

// TakeReceiptContext is [Service.TakeReceipt] under ctx, as
// [Service.TakeContext] is Take: each limiter of the rule that takes a
// context and gives receipts under one (see [hotlimit.ContextRefunder],
// such as redislimit's) is asked under ctx, and the error is the
// limiters', as TakeContext returns it. A limit that could not decide,
// whose failure policy passed the request, holds nothing in the receipt:
// its quota was not asked. redislimit's FailLocal, the default, counts
// such a request in its in-process limiter all the same, where no refund
// reaches it: a request given back during an outage still counts there,
// as one that was served does. A request that ended while a limit could not
// decide is given back by every limit of a rule of several, as
// TakeContext says, and gets the zero Receipt. A rule of one limit whose
// limiter takes a context but gives no receipt under one
// ([hotlimit.ContextTaker] alone) is decided under ctx and gets the zero
// Receipt.
func (s *Service) TakeReceiptContext(ctx context.Context, user, api string, n int) (hotlimit.Decision, Receipt, error) {
	var r Receipt
	d, err := s.rules.Load().resolve(user, api).takeReceipt(orBackground(ctx), s.keys, user, api, n, &r)
	return d, r, err
}

// Refund gives back what r took, limit by limit, as each limit's own
// Refund gives back its own receipt (see [hotlimit.Refunder]): each under
// the key of its scope ("3:zed|GET /pay", "user|zed", "api|GET /pay" or
// "global"), never more than that limit took, and, once the requests have
// aged in the limit's memory, less or nothing. A limit that took nothing is
// not asked. The limits are given back in the reverse of the order they
// were taken in. The limiters are the rule's when r was taken: across a
// [Service.Replace], a limit that the new rules keep (the same Config, so
// the same limiter and state) gets the refund, and one they changed or
// removed is given back in its old limiter, whose quota it took; the new
// limiter took nothing and gets nothing.
//
// A refund is not a decision: the observer and the shadow hook do not hear
// of it. The zero Receipt gives back nothing. Refund a receipt at most
// once: a second refund may give back what was not taken (never beyond a
// new key's full quota), as the limiters' Refund says. Limiters that take a
// context are given back without one (context.Background()); see
// [Service.RefundContext]. Should a limit's refund panic, the limits
// before it are given back all the same, and the panic goes on. With the
// in-memory limiters, a refund allocates nothing, but when it returns a
// key to a new key's state and the limiter frees it (see the limiters'
// Refunds). A nil or zero Service, which [New] did not make (see
// [Service.Built]), gives back nothing, whatever the receipt: it took
// nothing, and a receipt from another Service is given back by that one.
func (s *Service) Refund(r Receipt) {
	if r.ru != nil && s.Built() {
		//lint:ignore SA1012 nil: given back without a context
		_ = r.ru.refund(nil, s.keys, &r)
	}
}

// RefundContext is [Service.Refund] under ctx, for limiters whose refunds
// wait on something outside the process, such as redislimit's on Redis:
// each limit whose limiter is a [hotlimit.ContextRefunder] is given back
// under ctx, as given (a request that has ended may pass
// context.WithoutCancel of its context, to give back all the same), and
// the error joins theirs. A limit's error does not say that nothing was
// given back (redislimit's RefundContext says why): do not refund the
// receipt again. A nil or zero Service gives back nothing, as Refund, and
// returns an error saying that New did not make it.
func (s *Service) RefundContext(ctx context.Context, r Receipt) error {
	if !s.Built() {
		return errNotBuilt
	}
	if r.ru == nil {
		return nil
	}
	return r.ru.refund(orBackground(ctx), s.keys, &r)
}

// takeReceipt is take for TakeReceipt, or takeContext for
// TakeReceiptContext when ctx is not nil: it decides n requests from user
// to api and sets *out to what they took (out is the zero Receipt).
func (ru *rule) takeReceipt(ctx context.Context, cache *keyCache, user, api string, n int, out *Receipt) (hotlimit.Decision, error) {
	if ctx != nil && !ru.waits {
		ctx = nil // no limiter takes it: decide as take does
	}
	if ru.multi == nil && ctx == nil && ru.transient {
		// An in-memory limiter, asked under a key on the stack, as take
		// asks it; a longer key is built in a keyBuf below.
		var sk stackKey
		if k, ok := sk.key(ru.scope, user, api); ok {
			if lim, ok := ru.lim.(hotlimit.Refunder); ok {
				d, r := lim.TakeReceipt(k, n)
				return ru.oneReceipt(d, r, n, user, api, out), nil
			}
		}
	}
	var kb *keyBuf
	if ru.transient {
		kb = getKeyBuf()
		defer kb.put()
	}
	k := keys{cache: cache, buf: kb, user: user, api: api}
	if ru.multi != nil {
		d, i, own, shadow, err := ru.multi.take(ctx, k, n, nil, &out.taken)
		out.hold(ru, user, api)
		d, _ = ru.several(d, i, own, shadow, n, false, user, api)
		return d, err
	}
	var d hotlimit.Decision
	var r hotlimit.Receipt
	var err error
	if ctx != nil {
		switch lim := ru.lim.(type) {
		case hotlimit.ContextRefunder:
			d, r, err = lim.TakeReceiptContext(ctx, k.of(ru.scope), n)
			if undecided(err) {
				r = hotlimit.Receipt{} // its failure policy's: its quota was not asked
			}
		case hotlimit.ContextTaker:
			d, err = lim.TakeContext(ctx, k.of(ru.scope), n)
		}
	} else if lim, ok := ru.lim.(hotlimit.Refunder); ok {
		d, r = lim.TakeReceipt(k.of(ru.scope), n)
	} else {
		d = ru.lim.Take(k.of(ru.scope), n)
	}
	d = ru.oneReceipt(d, r, n, user, api, out)
	if err != nil && d.Allowed {
		err = endedUndecided(ctx, err)
	}
	return d, err
}

// oneReceipt finishes the decision d of a rule of one limit, whose limiter
// took r, as one does, and sets *out to r's receipt when r took anything.
func (ru *rule) oneReceipt(d hotlimit.Decision, r hotlimit.Receipt, n int, user, api string, out *Receipt) hotlimit.Decision {
	if r.N > 0 {
		out.taken[0] = r
		out.hold(ru, user, api)
	}
	d, _ = ru.one(d, n, user, api)
	return d
}

// hold makes r the receipt of ru for (user, api) when some limit took
// anything, and leaves it the zero Receipt otherwise.
func (r *Receipt) hold(ru *rule, user, api string) {
	for _, t := range r.taken {
		if t.N > 0 {
			r.ru, r.user, r.api = ru, user, api
			return
		}
	}
	r.taken = [composite.MaxChildren]hotlimit.Receipt{}
}

// refund gives back what r took from ru's limiters (see Service.Refund),
// under ctx those that take one when ctx is not nil, and returns their
// errors joined.
func (ru *rule) refund(ctx context.Context, cache *keyCache, r *Receipt) error {
	if ru.multi == nil && ru.transient {
		// An in-memory limiter, which takes no context: given back under
		// a key on the stack, as takeReceipt took; a longer key is built
		// in a keyBuf below.
		var sk stackKey
		if k, ok := sk.key(ru.scope, r.user, r.api); ok {
			if lim, ok := ru.lim.(hotlimit.Refunder); ok && r.taken[0].N > 0 {
				lim.Refund(k, r.taken[0])
			}
			return nil
		}
	}
	var kb *keyBuf
	if ru.transient {
		kb = getKeyBuf()
		defer kb.put()
	}
	k := keys{cache: cache, buf: kb, user: r.user, api: r.api}
	if ru.multi != nil {
		return ru.multi.refund(ctx, &k, len(ru.multi.children), &r.taken, nil)
	}
	t := r.taken[0]
	if t.N < 1 {
		return nil
	}
	if cr, ok := ru.lim.(hotlimit.ContextRefunder); ok && ctx != nil {
		return cr.RefundContext(ctx, k.of(ru.scope), t)
	}
	if lim, ok := ru.lim.(hotlimit.Refunder); ok {
		lim.Refund(k.of(ru.scope), t)
	}
	return nil
}

// refund gives back, in reverse order, what each of the first upto limits
// took by taken, skipping those that took nothing, the limits that take a
// context under ctx (as it is) when ctx is not nil, and returns errs with
// their errors, joined. Should a limit's refund panic, the limits before it
// are given back all the same, and then the panic goes on, as in giveBack.
func (m *multi) refund(ctx context.Context, k *keys, upto int, taken *[composite.MaxChildren]hotlimit.Receipt, errs []error) error {
	j := upto - 1
	defer func() {
		if j >= 0 { // the j-th limit's refund panicked
			_ = m.refund(ctx, k, j, taken, nil)
		}
	}()
	for ; j >= 0; j-- {
		t := taken[j]
		switch {
		case t.N < 1:
		case ctx != nil && m.withContext[j] != nil:
			errs = m.appendLimitErr(errs, j, m.withContext[j].RefundContext(ctx, k.of(m.limits[j].Scope), t))
		default:
			m.children[j].Refund(k.of(m.limits[j].Scope), t)
		}
	}
	return errors.Join(errs...)
}
