package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
	"github.com/hotlimit/hotlimit/service"
)

// recvPrefix starts the API of a received stream message.
const recvPrefix = "RECV "

// limiter is what every interceptor of one configuration shares.
type limiter struct {
	svc      *service.Service
	o        options
	policies *transport.Policies
}

func newLimiter(svc *service.Service, user KeyFunc, opts []Option) *limiter {
	if !svc.Built() {
		svc = nil // a Service service.New did not build is not usable: it is a missing one
	}
	o := newOptions(user, opts)
	return &limiter{svc: svc, o: o, policies: transport.NewPolicies(o.name)}
}

// verdict is one decision and what to tell the caller about it.
type verdict struct {
	e      Event
	policy *transport.Policy // nil when the limiter failed
	err    error             // the status to fail the call with; nil to proceed
	// others are the other limits of a rule of several, each with its own
	// decision, advertised after policy; nil for a rule of one limit, with
	// the RateLimit metadata off, which alone tells them, and for a
	// received message that is not denied, which sends none.
	others []service.LimitDecision
}

// decide finds the keys of a call (or of a received message, when recv is
// not empty) and takes one from the service. recv is the API of the stream's
// messages keyed by their method, recvPrefix + boundMethod(method), made
// once per stream: a message keyed so (the default) uses it as it is, with
// no allocation per message. It never panics: a nil service (or one
// service.New did not build, see newLimiter), or a key function,
// WithPolicyName function or limiter that panics, gives a verdict whose err is
// codes.Internal (nil under dry run) and whose Event.Err says why, so that a
// fault fails one call, never the server.
func (l *limiter) decide(ctx context.Context, method string, req any, recv string) (v verdict) {
	message := recv != ""
	v.e = Event{FullMethod: method, Message: message, DryRun: l.o.dryRun}
	defer func() {
		if r := recover(); r != nil {
			l.fail(&v, fmt.Errorf("grpclimit: a key function, the WithPolicyName function or a limiter panicked: %v", r))
		}
	}()
	user, found := l.o.user(ctx, method, req)
	if !found { // whatever text came with it: no key is the empty user's
		user = ""
	}
	api, ok := l.o.api(ctx, method, req)
	if !ok || api == "" {
		api = boundMethodIn(ctx, method)
	}
	if message {
		if api == recv[len(recvPrefix):] {
			api = recv
		} else {
			api = recvPrefix + api
		}
	}
	v.e.User, v.e.API = user, api
	if l.svc == nil {
		l.fail(&v, errNoService)
		return v
	}
	// The call's context reaches limiters that wait on something outside
	// the process (Redis), so its deadline bounds the decision. When such a
	// limiter fails, its failure policy decided: a pass goes on (the error
	// is in Event.Err), a denial is codes.Unavailable, the code for a
	// dependency that may come back, not a quota the caller spent; unless
	// the call's own deadline passed, or its caller left, meanwhile: that,
	// not the dependency, ended the call (DeadlineExceeded or Canceled).
	//
	// A call that has ended before it is decided (its caller left, its
	// deadline passed) takes nothing and fails with its context's status:
	// it will not be served, so spending a quota for it, perhaps one its key
	// shares with others, buys nothing. Nor does a call that ended while a
	// limiter that could not decide was asked go on when the failure policy
	// passes it: its handler would run for a call no limiter counted.
	if err := ctx.Err(); err != nil && !l.o.dryRun {
		ls := l.svc.ResolvePolicies(user, api)
		l.ended(&v, ls[0], l.policies.InRule(ls[0], len(ls), func(i int) hotlimit.Config { return ls[i] }).Name, err, err)
		return v
	}
	// The first limit TakeEach lists is the one that decided, with its own
	// decision (TakePolicy's); a rule of several limits lists the others
	// after it, each advertised with its own numbers.
	var buf [4]service.LimitDecision
	_, each, err := l.svc.TakeEach(ctx, user, api, 1, buf[:0])
	d, c := each[0].Decision, each[0].Config
	at := func(i int) hotlimit.Config { return each[i].Config }
	// An error wrapping a context's error while the call's context lasts,
	// or another one than the call's (a limiter's own timeout,
	// context.DeadlineExceeded, under a call its caller cancelled since),
	// is the limiter's own: it could not decide, and the call goes on as
	// for any other failure.
	if ended := transport.EndedBy(ctx, err); ended != nil && !l.o.dryRun {
		// Whatever the failure policy decided: a pass is not served, and a
		// denial's numbers were no limiter's, so no metadata tells them.
		l.ended(&v, c, l.policies.InRule(c, len(each), at).Name, err, ended)
		return v
	}
	// A received message sends metadata only when it is denied (the
	// stream's trailers): one that passes, or goes on under dry run, tells
	// no limit.
	tells := l.o.headers && (!message || !d.Allowed && !l.o.dryRun)
	if len(each) > 1 && tells {
		// Only the metadata tells the other limits, so only it needs their
		// copy (each may be buf, which dies with this call). Name them now,
		// under the recovery above: a WithPolicyName function that panics
		// must fail this call, not the server.
		v.others = slices.Clone(each[1:])
		for _, ld := range each[1:] {
			l.policies.InRule(ld.Config, len(each), at)
		}
	}
	v.policy = l.policies.InRule(c, len(each), at)
	v.e.Config, v.e.Policy, v.e.Decision, v.e.Err = c, v.policy.Name, d, err
	v.e.Unavailable = each[0].Err != nil
	switch {
	case d.Allowed || l.o.dryRun:
	case v.e.Unavailable:
		// The limit that denied could not decide: its failure policy did,
		// no quota spent. (Another limit's failure, to report its state
		// for a denial that is real, leaves it a quota spent.)
		v.err = unavailableDenial(d)
	default:
		v.err = denial(user, v.policy, d)
	}
	return v
}

// ended makes v the verdict of a call whose context ended before it was
// decided, or while a limiter that could not decide was asked (err is then
// the limiter's): a Decision that denies, under c named policy (as the
// rule's decided calls name it), with no metadata to send, and the status
// of ctxErr, the context's error.
func (l *limiter) ended(v *verdict, c hotlimit.Config, policy string, err, ctxErr error) {
	v.policy, v.others = nil, nil
	v.e.Config, v.e.Policy, v.e.Decision, v.e.Err = c, policy, transport.EndedDecision(c), err
	v.e.Unavailable = false
	v.err = status.FromContextError(ctxErr).Err()
}

// fail makes v the verdict of a limiter that could not decide.
func (l *limiter) fail(v *verdict, err error) {
	v.policy, v.others = nil, nil
	v.e.Config, v.e.Policy, v.e.Decision = hotlimit.Config{}, "", hotlimit.Decision{}
	v.e.Err, v.e.Unavailable = err, false
	v.err = nil
	if !l.o.dryRun {
		v.err = errInternal
	}
}

// The statuses of a limiter that could not decide. Their message says no
// more: the error, which names the server's own infrastructure (a Redis
// address, a refused password, a panic's value), stays on the server, in
// Event.Err, as httplimit keeps it out of its 503.
var (
	errUnavailable = status.Error(codes.Unavailable, unavailable)
	errInternal    = status.Error(codes.Internal, unavailable)
)

// unavailable is the message of a limiter that could not decide.
const unavailable = "rate limiter unavailable"

var (
	errNoService = errors.New("grpclimit: no service: give the interceptor one made by service.New or service.NewFromRules")
	errNoStream  = errors.New("grpclimit: the stream interceptor was called without a server stream")
	errPanicked  = errors.New("handler panicked")
)

// admit decides a call of method, with req for the key functions, unless
// method is exempt: then exempt is true and there is nothing to decide. A
// Selector that panics exempts nothing, and fails the call as a panicking
// key function does (codes.Internal, nil under dry run).
func (l *limiter) admit(ctx context.Context, method string, req any) (v verdict, exempt bool) {
	switch ex, err := l.exemption(method); {
	case err != nil:
		return l.failed(method, err), false
	case ex:
		return v, true
	}
	return l.decide(ctx, method, req, ""), false
}

// failed is the verdict of a call of method whose exemption could not be
// decided: err fails it (codes.Internal, nil under dry run).
func (l *limiter) failed(method string, err error) (v verdict) {
	v.e = Event{FullMethod: method, DryRun: l.o.dryRun}
	l.fail(&v, err)
	return v
}

// exemption reports whether method is exempt: by HealthAndReflection, the
// default, which cannot panic, asked directly, or by the Selector given,
// whose panic is recovered as err.
func (l *limiter) exemption(method string) (exempt bool, err error) {
	switch {
	case l.o.exemptOwn:
		return HealthAndReflection(method), nil
	case l.o.exempt != nil:
		return l.exempts(method)
	}
	return false, nil
}

// exempts asks the Selector about method, recovering its panic as err.
func (l *limiter) exempts(method string) (exempt bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			exempt, err = false, fmt.Errorf("grpclimit: the WithExempt selector panicked: %v", r)
		}
	}()
	return l.o.exempt(method), nil
}

// observe reports v to the observer, if any. An observer that panics fails
// the call as a panicking key function does (codes.Internal, and no
// metadata; the call proceeds under dry run), since grpc-go would not
// recover the panic and the whole server would crash.
func (l *limiter) observe(v *verdict) {
	if l.o.observe == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			l.fail(v, fmt.Errorf("grpclimit: the WithObserver function panicked: %v", r))
		}
	}()
	l.o.observe(v.e)
}

// header returns the RateLimit metadata of a call that proceeds, or nil when
// there is none to send: with the metadata off, when the limiter failed, for
// an allow-listed caller (an Unlimited rule), which has no quota to
// advertise (its metadata would read q=0 beside the largest r), and under a
// rule whose every limit is in shadow mode, whose numbers would pace clients
// by a limit nobody enforces. A limit in shadow mode beside others is left
// out of their items for the same reason: TakeEach does not list it.
func (l *limiter) header(v *verdict) metadata.MD {
	if !l.o.headers || v.policy == nil || !transport.Advertised(v.policy.Config) {
		return nil
	}
	// A limit whose limiter could not decide has its policy advertised, not
	// its failure policy's numbers, which count nothing: see rateLimitMD.
	md := rateLimitMD(v.policy, v.e.Decision, !v.e.Unavailable)
	at := func(i int) hotlimit.Config { // the rule's limits, as TakeEach listed them
		if i == 0 {
			return v.policy.Config
		}
		return v.others[i-1].Config
	}
	for _, ld := range v.others {
		appendItems(md, l.policies.InRule(ld.Config, 1+len(v.others), at), ld.Decision, ld.Err == nil)
	}
	return md
}

// trailer returns the metadata of a denied call: the pushback and the
// RateLimit fields, or nil when the limiter failed. A denial sends them as
// trailers and no header, so that the response is Trailers-Only: a client
// that has received response headers has committed the call and may no
// longer retry it (gRFC A6), whatever the pushback says.
func (l *limiter) trailer(v *verdict) metadata.MD {
	if v.policy == nil {
		return nil
	}
	md := l.header(v)
	if md == nil {
		md = metadata.MD{}
	}
	md[MetadataPushback] = []string{pushback(v.e.Decision)}
	return md
}

// UnaryServerInterceptor returns an interceptor that limits every unary call
// with svc: one Take(user, api, 1), by default (peer IP, full method). See
// the package doc for what a call is told.
func UnaryServerInterceptor(svc *service.Service, opts ...Option) grpc.UnaryServerInterceptor {
	l := newLimiter(svc, PeerIP(), opts)
	return l.unary
}

func (l *limiter) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var method string // a call of no method when called by hand without info
	if info != nil {
		method = info.FullMethod
	}
	var v verdict
	switch ex, err := l.exemption(method); {
	case err != nil:
		v = l.failed(method, err)
	case ex:
		return handler(ctx, req)
	default:
		v = l.decide(ctx, method, req, "")
	}
	l.observe(&v)
	// Setting metadata fails only without a transport stream, as in a
	// direct call of the interceptor.
	if v.err != nil {
		if md := l.trailer(&v); md != nil {
			_ = grpc.SetTrailer(ctx, md)
		}
		return nil, v.err
	}
	md := l.header(&v)
	if md == nil {
		return handler(ctx, req)
	}
	// The metadata is set once the handler has returned, never before: a
	// header set before would be sent with any failure of the handler or of
	// an interceptor after this one (another limit that denies), and a
	// response with headers is committed, so the client's retry policy
	// could no longer retry it, whatever its pushback says (gRFC A6). A
	// failure carries the metadata in its trailers instead, and so does a
	// response whose handler has already sent its headers. A handler that
	// panics has failed too: a recovery interceptor outside this one may
	// answer the call, which was counted, so the deferred call gives the
	// metadata to its trailers as the panic unwinds, without recovering it.
	returned := false
	defer func() {
		if !returned {
			_ = grpc.SetTrailer(ctx, md)
		}
	}()
	resp, err := handler(ctx, req)
	returned = true
	if err != nil || grpc.SetHeader(ctx, md) != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
	return resp, err
}

// StreamServerInterceptor returns an interceptor that limits every stream at
// its start, with req nil for the key functions, and with
// [WithStreamMessages] every message it receives.
func StreamServerInterceptor(svc *service.Service, opts ...Option) grpc.StreamServerInterceptor {
	l := newLimiter(svc, PeerIP(), opts)
	return l.stream
}

func (l *limiter) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	var method string // a call of no method when called by hand without info
	if info != nil {
		method = info.FullMethod
	}
	var v verdict
	var kc *keysCtx // with WithStreamMessages: the context of the stream's decisions
	if ss == nil {
		// Called by hand without a stream: no context to decide under.
		v.e = Event{FullMethod: method, DryRun: l.o.dryRun}
		l.fail(&v, errNoStream)
	} else {
		ctx := ss.Context()
		if l.o.messages && ctx != nil {
			// The start and the messages are keyed under one context,
			// which remembers the digests of the stream's long values.
			kc = &keysCtx{Context: ctx}
			ctx = kc
		}
		var exempt bool
		if v, exempt = l.admit(ctx, method, nil); exempt {
			return handler(srv, ss)
		}
	}
	l.observe(&v)
	if v.err != nil {
		if md := l.trailer(&v); md != nil {
			ss.SetTrailer(md)
		}
		return v.err
	}
	var hs *headerStream
	if md := l.header(&v); md != nil {
		hs = &headerStream{ServerStream: ss, md: md}
		ss = hs
	}
	var rl *recvLimited
	if l.o.messages && ss != nil { // a nil stream goes on as it came, under dry run
		var ctx context.Context // nil for a stream without a context, not a nil *keysCtx
		if kc != nil {
			ctx = kc
		}
		rl = &recvLimited{ServerStream: ss, l: l, hs: hs, kc: kc, method: method, api: recvPrefix + boundMethodIn(ctx, method)}
		ss = rl
	}
	if hs == nil && rl == nil {
		return handler(srv, ss)
	}
	// A handler that panics has failed: done gives the metadata to the
	// trailers as the panic unwinds (without recovering it), for a recovery
	// interceptor outside this one to answer the stream with.
	err := errPanicked
	defer func() {
		if hs != nil {
			hs.done(err)
		}
		if rl != nil {
			rl.done()
		}
	}()
	err = handler(srv, ss)
	return err
}

// headerStream sends the RateLimit metadata of a stream that proceeds with
// the stream's headers, when the handler sends its first message or its
// headers, and not before: metadata set at the start would be sent with a
// failure of the handler (or of a limit on its first received message), and
// a response with headers is committed, so the client could no longer retry
// it (gRFC A6). A stream that fails before sending anything carries the
// metadata in its trailers, unless one of its received messages was denied:
// the trailers then describe the last such denial alone (see recvLimited).
//
// md never changes. given is set once md has gone into the headers, or has
// been dropped for a denied message's; tried is read and written only on
// the handler's sending side (SendHeader and SendMsg, which gRPC allows one
// goroutine at a time) and after the handler has returned.
type headerStream struct {
	grpc.ServerStream
	md    metadata.MD
	given atomic.Bool // md is in the headers, or dropped: nothing more to send
	tried bool        // SetHeader of md failed: the headers left another way
}

// flush adds md to the headers the stream will send. When the handler has
// already sent its headers another way (grpc.SendHeader on the stream's
// context), md stays pending, for done to put in the trailers.
//
// A message denied meanwhile on the receiving goroutine may set given
// between the Load and the Store: md then goes into the headers, which are
// the start's to describe, and the trailers still carry only the denial's.
func (s *headerStream) flush() {
	if s.tried || s.given.Load() {
		return
	}
	if s.ServerStream.SetHeader(s.md) != nil {
		s.tried = true
		return
	}
	s.given.Store(true)
}

func (s *headerStream) SendHeader(md metadata.MD) error {
	s.flush()
	return s.ServerStream.SendHeader(md)
}

func (s *headerStream) SendMsg(m any) error {
	s.flush()
	return s.ServerStream.SendMsg(m)
}

// drop gives up md, for a stream whose received message was denied: its
// trailers describe that denial, not the stream's start.
func (s *headerStream) drop() { s.given.Store(true) }

// done gives md to the stream once the handler has returned err: in the
// headers of a success, which then go with its status, and in the trailers
// of a failure, which stays Trailers-Only. The CompareAndSwap keeps md from
// being given twice, and from being given after drop.
func (s *headerStream) done(err error) {
	if !s.given.CompareAndSwap(false, true) {
		return
	}
	if err != nil || s.ServerStream.SetHeader(s.md) != nil {
		s.ServerStream.SetTrailer(s.md)
	}
}

// recvLimited limits each message a server stream receives. hs, when not
// nil, holds the stream start's metadata still to send.
//
// The trailers describe the stream's last denied message alone: the one a
// handler that drops denied messages and goes on most likely fails the
// stream with, and the freshest pushback. A denial's metadata waits in
// denial, each replacing the one before (a denial whose limiter failed,
// codes.Internal, with none, as a unary call denied so has none), and done
// sets it once the handler has returned or panicked. Setting each as it comes would add every denial's fields
// and pushback to the trailers (grpc-go joins what SetTrailer is given),
// without bound on a long stream, and a trailer of several pushback values
// is one gRFC A6 clients ignore; keeping the first would tell a stream that
// fails with a later denial that denial's status beside an earlier
// denial's pushback, perhaps long past.
//
// RecvMsg runs on one goroutine at a time, but the handler may move it from
// one to another, and done runs on the handler's, hence the atomic.
type recvLimited struct {
	grpc.ServerStream
	l      *limiter
	hs     *headerStream
	method string
	// kc is the keysCtx of the stream's last decision (its start's at
	// first): the stream's context then, with the keys found in it; nil
	// while the stream has given no context. Read and written only by
	// RecvMsg (after the start).
	kc     *keysCtx
	api    string                      // recvPrefix + boundMethod(method)
	denial atomic.Pointer[metadata.MD] // the last denial's trailers; nil: no denial
}

func (s *recvLimited) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	v := s.l.decide(s.context(), s.method, m, s.api)
	s.l.observe(&v)
	if v.err != nil {
		if s.hs != nil {
			s.hs.drop()
		}
		md := s.l.trailer(&v)
		s.denial.Store(&md)
		return v.err
	}
	return nil
}

// context returns the context a received message is decided under: the
// stream's as it is now, in the keysCtx of the message before when the
// stream still gives the same context (grpc-go's always does), so that its
// keys are found once; in a new one when an interceptor chained before this
// one has given the stream another context since (one that authenticates
// each message, say), whose metadata, peer and values may differ. The new
// one keeps the digests of long values, which depend on the values alone.
func (s *recvLimited) context() context.Context {
	ctx := s.ServerStream.Context()
	if ctx == nil { // a stream without a context: its messages fail as its start did
		return nil
	}
	if s.kc == nil || !sameContext(s.kc.Context, ctx) {
		s.kc = s.kc.with(ctx)
	}
	return s.kc
}

// done sets the trailers of the stream's last denied message, if any, once
// the handler has returned.
func (s *recvLimited) done() {
	if md := s.denial.Swap(nil); md != nil && *md != nil {
		s.ServerStream.SetTrailer(*md)
	}
}

// UnaryClientInterceptor returns an interceptor for callers that limit
// themselves: each call takes one from svc before it is sent, under the
// empty user and the full method unless [WithUser] and [WithAPI] say
// otherwise ([OutgoingMetadata] reads the call's own metadata), and a denied
// call fails at once with the same ResourceExhausted status a server would
// send, without reaching the network. Exemptions, dry run and the observer
// apply; there is no response metadata to set.
//
// A denied call is not waited for (unless [WithWait] is given), nor
// retried: the client's retry policy (a service config's retryPolicy
// listing RESOURCE_EXHAUSTED) retries within invoker, which a denied call
// never reaches, so it fails at once whatever the policy, even where a
// server's denial of the same call would be retried after its pushback. A
// caller that should come back reads the wait from the status's
// google.rpc.RetryInfo (see [RetryDelay]).
func UnaryClientInterceptor(svc *service.Service, opts ...Option) grpc.UnaryClientInterceptor {
	l := newLimiter(svc, noKey, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		if err := l.admitClient(ctx, method, req); err != nil {
			return err
		}
		return invoker(ctx, method, req, reply, cc, callOpts...)
	}
}

// StreamClientInterceptor is [UnaryClientInterceptor] for streams: each
// stream takes one when it is opened, with req nil.
func StreamClientInterceptor(svc *service.Service, opts ...Option) grpc.StreamClientInterceptor {
	l := newLimiter(svc, noKey, opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		if err := l.admitClient(ctx, method, nil); err != nil {
			return nil, err
		}
		return streamer(ctx, desc, cc, method, callOpts...)
	}
}

// admitClient decides a call a client is about to send, reporting each
// decision to the observer: nil to send it, or the status to fail it
// with. Under WithWait, a denial for quota is waited out (see waiter).
func (l *limiter) admitClient(ctx context.Context, method string, req any) error {
	v, exempt := l.admit(ctx, method, req)
	if exempt {
		return nil
	}
	l.observe(&v)
	if v.err == nil || !l.o.wait || status.Code(v.err) != codes.ResourceExhausted {
		return v.err
	}
	w := &waiter{l: l, method: method, req: req, v: v, first: true}
	err := hotlimit.WaitN(ctx, w, "", 1, l.o.waitOpts...)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		// The context ended during a sleep, or while the service was
		// asked again: the call took nothing, and ends as its context did.
		if w.v.err != nil && status.Code(w.v.err) != codes.ResourceExhausted {
			return w.v.err // the last ask's own answer to the ended call
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	// The wait would pass the call's deadline, or the last denial cannot
	// be waited out: the call fails as that denial fails it.
	return w.v.err
}

// waiter is the call of admitClient as the hotlimit.Limiter that
// hotlimit.WaitN asks again while it is denied: each ask decides the call
// (taking one, reporting it to the observer) and keeps its verdict. A
// denial for quota reads as its RetryAfter; any other failure as Never,
// which WaitN does not wait out. Its first ask answers with the verdict
// admitClient already has, so that the denial that starts the wait is
// not asked and counted twice.
type waiter struct {
	l      *limiter
	method string
	req    any
	v      verdict
	first  bool
}

func (w *waiter) Allow(string) bool { return w.Take("", 1).Allowed }

func (w *waiter) Take(_ string, n int) hotlimit.Decision {
	d, _ := w.TakeContext(context.Background(), "", n)
	return d
}

func (w *waiter) TakeContext(ctx context.Context, _ string, _ int) (hotlimit.Decision, error) {
	if !w.first {
		var exempt bool
		if w.v, exempt = w.l.admit(ctx, w.method, w.req); exempt {
			return hotlimit.Decision{Allowed: true}, nil
		}
		w.l.observe(&w.v)
	}
	w.first = false
	switch {
	case w.v.err == nil:
		return hotlimit.Decision{Allowed: true}, nil
	case status.Code(w.v.err) != codes.ResourceExhausted:
		return hotlimit.Decision{RetryAfter: hotlimit.Never}, nil
	}
	return hotlimit.Decision{RetryAfter: w.v.e.Decision.RetryAfter}, nil
}

// noKey is the client's default user: none, so the whole client shares one
// quota per method.
func noKey(context.Context, string, any) (string, bool) { return "", false }
