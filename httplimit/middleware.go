package httplimit

import (
	"errors"
	"net/http"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/hotlimit/hotlimit/internal/transport"
	"github.com/hotlimit/hotlimit/service"
)

// Event describes one decision of the middleware. It is passed by value to
// the observer and the deny handler; Request is the request decided on.
type Event struct {
	Request *http.Request
	// User and API are the keys the request was limited under.
	User, API string
	// Config is the policy the service resolved for (User, API): for a
	// rule of several limits, the limit that decided (see
	// service.Service.TakePolicy). For a request that ended before its
	// decision, it is the rule's first limit not in shadow mode, or its
	// first when every limit is, with the service's burst spelled out
	// (service.Service.ResolvePolicy).
	Config hotlimit.Config
	// Policy is the policy's name in the RateLimit fields: for a request
	// that ended before its decision, the name the rule's decided requests
	// give Config there.
	Policy string
	// Decision is the limiter's answer under Config: for a rule of several
	// limits, Allowed and RetryAfter are the rule's, Limit, Remaining and
	// ResetAfter Config's own, as the first RateLimit item advertises them.
	Decision hotlimit.Decision
	// DryRun reports that the request reaches the handler whatever
	// Decision.Allowed says.
	DryRun bool
	// Err is the error of the limiters that could not decide (one on Redis
	// that cannot reach it, say), or could not give back what they took,
	// joined for a rule of several limits; nil otherwise. Where the
	// limiter of Config failed, Unavailable is set and its failure policy
	// made Decision: a pass lets the request through, a denial is answered
	// by [DenyProblem] with 503 Service Unavailable, since the client spent
	// no quota. Where only another limit of the rule failed, Decision is
	// Config's own: a denial is a quota spent, answered 429, and Err tells
	// the observer of the failure.
	//
	// Err is also the request context's error when the request ended (its
	// client left, its deadline passed) before the middleware decided it,
	// or while a limiter that could not decide was asked: such a request
	// takes nothing and is not served, whatever a failure policy says;
	// Ended is set, and the deny handler answers it with a Decision that
	// denies. Under [WithDryRun] it is decided and served as any other.
	//
	// Err is also, for a middleware given no service that service.New made
	// (see [New]), an error saying to give it one: every other field but
	// Request and DryRun is then zero, and the request is answered 500, or,
	// under [WithDryRun], served.
	Err error
	// Unavailable reports that the limiter of Config, the limit that
	// decided, could not decide: Decision is its failure policy's, and Err
	// holds why (see service.LimitDecision.Err).
	Unavailable bool
	// Ended reports that the request ended before it was decided, or
	// while a limiter that could not decide was asked (see Err): it took
	// nothing and is not served. A request whose context ends after its
	// decision is not Ended, even when Err holds another limit's error: it
	// is served, or denied, as decided; its handler, or the deny handler,
	// sees the ended context.
	Ended bool
}

// errNoService is Event.Err for a request the middleware answers 500 since
// it was given no service that service.New made.
var errNoService = errors.New("httplimit: no service: give the middleware one made by service.New or service.NewFromRules")

// DenyFunc answers a denied request. When it runs, the RateLimit fields and
// Retry-After are already in w.Header(); it writes the status and the body.
type DenyFunc func(w http.ResponseWriter, r *http.Request, e Event)

// Option configures the middleware returned by [New].
type Option func(*options)

type options struct {
	user       KeyFunc
	api        KeyFunc
	name       func(hotlimit.Config) string
	deny       DenyFunc
	observe    func(Event)
	dryRun     bool
	legacy     bool
	apiDefault bool
	exempt     func(*http.Request) bool
}

// WithUser sets how the user is found; the default is [ClientIP] with no
// trusted proxy. A nil f keeps the default.
func WithUser(f KeyFunc) Option {
	return func(o *options) {
		if f != nil {
			o.user = f
		}
	}
}

// WithAPI sets how the API is found; the default is [RoutePattern] of the
// wrapped handler when it is a *http.ServeMux (see the package doc). A
// request for which f finds no key is limited under the empty API. A nil f
// keeps the default.
func WithAPI(f KeyFunc) Option {
	return func(o *options) {
		if f != nil {
			o.api, o.apiDefault = f, false
		}
	}
}

// WithPolicyName names policies in the RateLimit fields; the default is
// [PolicyName]. The name is computed once per Config and cached, so f must
// return the same name for the same Config. Characters outside printable
// ASCII become '_'; an empty name falls back to the default. A nil f keeps the
// default. Two nested middlewares advertising equal Configs need names of
// their own, or a response lists two items of one name (see the package
// doc).
func WithPolicyName(f func(hotlimit.Config) string) Option {
	return func(o *options) {
		if f != nil {
			o.name = f
		}
	}
}

// WithDenyHandler replaces the 429 problem+json answer to a denied request. A
// nil f keeps the default, [DenyProblem].
//
// f also answers the requests that spent no quota: those the failure policy
// of a limiter that could not decide denied ([Event.Unavailable]; Redis
// unreachable, say) and those that ended before they were decided
// ([Event.Ended]: the client left, or its deadline passed). Answering them
// 429 would tell a client it went over its limit when it did not; an f that
// only changes the body of a 429 passes them to DenyProblem, which answers
// 503.
func WithDenyHandler(f DenyFunc) Option {
	return func(o *options) {
		if f != nil {
			o.deny = f
		}
	}
}

// WithObserver calls f with every decision, on the request's goroutine,
// before the handler or the deny handler runs, and with every request a
// middleware given no service answers 500, or lets through under dry run
// (see Event.Err). f must be safe
// for concurrent use and should be quick; counting decisions per
// Event.Policy and Event.Decision.Allowed is the intended use. A nil f removes the observer.
func WithObserver(f func(Event)) Option {
	return func(o *options) { o.observe = f }
}

// WithDryRun, when on, lets every request through: the middleware still takes
// from the limiter, sets the RateLimit fields and reports each decision to the
// observer (with Event.DryRun set), but never denies and never sets
// Retry-After. The service's own observer (hotlimit.WithObserver) does not
// know of it and counts the requests it lets through as denied; a limit in
// shadow mode (Config.Shadow) is counted as shadow_denied instead.
//
// A dry run never blocks: given no service (nil, or one service.New did not
// build), the middleware lets every request through all the same and tells
// the observer why (Event.Err), where without dry run it answers 500.
func WithDryRun(on bool) Option {
	return func(o *options) { o.dryRun = on }
}

// WithLegacyHeaders, when on, also sets X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset (seconds from now) on every
// response that carries the RateLimit fields, with the q, r and t of their
// first item, the policy that decided (see the package doc): not on one to
// an allow-listed caller, under a rule whose every limit is in shadow mode,
// to an exempt request or to one that ended before its decision, which carry
// none. A limit whose limiter could not decide has X-RateLimit-Limit alone,
// as it has no RateLimit item.
func WithLegacyHeaders(on bool) Option {
	return func(o *options) { o.legacy = on }
}

// WithExempt sets the requests that are never limited: those for which f
// returns true go to the next handler as they are, take nothing from any
// quota, get no RateLimit fields and are not reported to the observer, as
// grpclimit's WithExempt does for methods. f runs first, on every request,
// so it must be safe for concurrent use and quick. A nil f exempts nothing,
// which is the default.
//
// Whatever f lets through is unlimited, and a client chooses most of what f
// can look at (the method, the headers, the path): exempt only requests
// whose handler does no work worth limiting. WithExempt([IsPreflight]) is
// the recipe for CORS preflights answered by a handler behind this
// middleware; see the package doc for why it is not the default.
//
// Given no service (nil, or one service.New did not build), the middleware
// serves the requests f exempts all the same, unreported, and answers every
// other request 500, or lets it through under [WithDryRun].
func WithExempt(f func(r *http.Request) bool) Option {
	return func(o *options) { o.exempt = f }
}

// IsPreflight reports whether r is a CORS preflight request: an OPTIONS
// request with an Origin and an Access-Control-Request-Method header, which
// a browser sends on its own before a cross-origin request that is not
// "simple". It is meant for [WithExempt]. Any client can send those headers: a
// request it matches is a preflight only if what answers it treats it as one.
func IsPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions &&
		r.Header.Get("Origin") != "" &&
		r.Header.Get("Access-Control-Request-Method") != ""
}

// New returns middleware that limits every request with svc. Options are
// applied in order. A nil svc, or a service.Service that service.New did not
// build (see [service.Service.Built]), is a configuration error
// that the middleware reports by answering every request with 500 Internal
// Server Error, never by letting requests through unlimited, and by telling
// the observer why (see Event.Err). A dry run never blocks: under
// [WithDryRun], given no service, the middleware lets every request through
// all the same and tells the observer why. Exempt requests are served all
// the same, unreported (see [WithExempt]). A nil handler given to the middleware
// (or one holding a nil function or pointer, such as a nil
// http.HandlerFunc) is http.NotFoundHandler, not http.DefaultServeMux as for an http.Server:
// to limit the handlers registered with http.Handle, pass
// http.DefaultServeMux itself, whose patterns then name the APIs.
func New(svc *service.Service, opts ...Option) func(http.Handler) http.Handler {
	o := options{user: ClientIP(), name: PolicyName, deny: DenyProblem, apiDefault: true}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return func(next http.Handler) http.Handler {
		if nilness.Is(next) { // a nil http.HandlerFunc too: it would panic at the first request allowed
			next = http.NotFoundHandler()
		}
		if !svc.Built() {
			svc = nil // a Service service.New did not build is not usable: it is a missing one
		}
		h := &handler{svc: svc, next: next, opts: o, policies: transport.NewPolicies(o.name)}
		if o.apiDefault {
			mux, _ := next.(*http.ServeMux)
			h.opts.api = RoutePattern(mux)
		}
		return h
	}
}

// handler is the middleware around one next handler.
type handler struct {
	svc      *service.Service
	next     http.Handler
	opts     options
	policies *transport.Policies
}

// noService answers a request that is not exempt for a middleware given no
// service: 500, or, under dry run, which never blocks, the next handler;
// the observer is told why either way.
func (h *handler) noService(w http.ResponseWriter, r *http.Request) {
	if h.opts.observe != nil {
		h.opts.observe(Event{Request: r, DryRun: h.opts.dryRun, Err: errNoService})
	}
	if h.opts.dryRun {
		h.next.ServeHTTP(w, r)
		return
	}
	http.Error(w, "rate limiter not configured", http.StatusInternalServerError)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.exempt != nil && h.opts.exempt(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	if h.svc == nil {
		h.noService(w, r)
		return
	}
	// A key function that finds no key may return text anyway: no key is
	// the empty user's, or the empty API's.
	user, found := h.opts.user(r)
	if !found {
		user = ""
	}
	api, found := h.opts.api(r)
	if !found {
		api = ""
	}
	ctx := r.Context()
	if err := ctx.Err(); err != nil && !h.opts.dryRun {
		// The request has ended (its client left, its deadline passed)
		// before it was decided: it will not be served, so it takes
		// nothing, whoever's quota its key names.
		ls := h.svc.ResolvePolicies(user, api)
		p := h.policies.InRule(ls[0], len(ls), func(i int) hotlimit.Config { return ls[i] })
		h.ended(w, r, user, api, ls[0], p.Name, err)
		return
	}
	// The request's context reaches limiters that wait on something outside
	// the process (Redis), so that its end bounds the decision.
	// The first limit TakeEach lists is the one that decided, with its own
	// decision (TakePolicy's); a rule of several limits lists the others
	// after it, each advertised with its own numbers.
	var buf [4]service.LimitDecision
	_, each, err := h.svc.TakeEach(ctx, user, api, 1, buf[:0])
	d, c := each[0].Decision, each[0].Config
	at := func(i int) hotlimit.Config { return each[i].Config }
	p := h.policies.InRule(c, len(each), at)
	if transport.EndedBy(ctx, err) != nil && !h.opts.dryRun {
		// The request ended while a limiter was asked, which could not
		// decide for it: the error wraps the request's end, its
		// context's error. (An error wrapping a context's error while the
		// request's lasts, or another one than the request's, as a
		// limiter's own timeout, context.DeadlineExceeded, under a
		// request its client cancelled since, is the limiter's own: it
		// could not decide, and the decision is answered as any other,
		// below; a rule of several limits gave back nothing.) A failure
		// policy that passes has passed it:
		// serving it now would run the handler for a request that no
		// limiter counted. One that denies made up its numbers (no quota
		// left): the request is answered as ended, either way, with no
		// fields describing a decision no limiter made.
		h.ended(w, r, user, api, c, p.Name, err)
		return
	}
	deny := !d.Allowed && !h.opts.dryRun
	if transport.Advertised(c) {
		// An allow-listed caller has no quota to advertise: its fields
		// would read q=0 beside the largest r. Nor does a rule whose
		// every limit is in shadow mode: its numbers would pace clients
		// by a limit nobody enforces. A denial is always advertised: the
		// limit that denies is neither Unlimited nor in shadow mode.
		// The others TakeEach lists are then advertised too: it lists a
		// limit in shadow mode only in a rule of nothing else.
		// A limit whose limiter could not decide (Err) has its policy
		// advertised, not its failure policy's numbers, which count
		// nothing: see setHeaders.
		setHeaders(w.Header(), p, d, each[0].Err == nil, h.opts.legacy, deny)
		for _, ld := range each[1:] {
			appendItems(w.Header(), h.policies.InRule(ld.Config, len(each), at), ld.Decision, ld.Err == nil)
		}
	}

	if h.opts.observe == nil && !deny {
		h.next.ServeHTTP(w, r)
		return
	}
	e := Event{Request: r, User: user, API: api, Config: c, Policy: p.Name, Decision: d, DryRun: h.opts.dryRun, Err: err, Unavailable: each[0].Err != nil}
	if h.opts.observe != nil {
		h.opts.observe(e)
	}
	if deny {
		h.opts.deny(w, r, e)
		return
	}
	h.next.ServeHTTP(w, r)
}

// ended answers a request whose context ended before it could be served:
// it is reported with Err set and a Decision that denies, and the deny
// handler answers it, without RateLimit fields, since no limiter decided.
// c is named policy, as the rule's decided requests name it.
func (h *handler) ended(w http.ResponseWriter, r *http.Request, user, api string, c hotlimit.Config, policy string, err error) {
	e := Event{Request: r, User: user, API: api, Config: c, Policy: policy,
		Decision: transport.EndedDecision(c), Err: err, Ended: true}
	if h.opts.observe != nil {
		h.opts.observe(e)
	}
	h.opts.deny(w, r, e)
}
