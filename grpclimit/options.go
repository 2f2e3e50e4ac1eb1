package grpclimit

import (
	"github.com/hotlimit/hotlimit"
)

// Event describes one decision. It is passed by value to the observer.
type Event struct {
	// FullMethod is the call's method, "/pkg.Service/Method".
	FullMethod string
	// User and API are the keys the call was limited under.
	User, API string
	// Config is the policy that decided (for a rule of several limits, see
	// service.Service.TakePolicy); Policy its name in the RateLimit fields.
	// For a call that ended before its decision, it is the rule's first
	// limit not in shadow mode, or its first when every limit is, with the
	// service's burst spelled out (service.Service.ResolvePolicy), and
	// Policy the name the rule's decided calls give it.
	Config hotlimit.Config
	Policy string
	// Decision is the limiter's answer under Config: for a rule of several
	// limits, Allowed and RetryAfter are the rule's, Limit, Remaining and
	// ResetAfter Config's own, as the RateLimit metadata advertises them.
	Decision hotlimit.Decision
	// Message reports a decision on a received stream message
	// ([WithStreamMessages]) rather than on a call.
	Message bool
	// DryRun reports that the call proceeds whatever Decision.Allowed says.
	DryRun bool
	// Err is the failure that kept the limiter from deciding. When a
	// limiter on a backend (Redis) failed, its failure policy decided:
	// Decision and Config are that decision and the policy, and a denial
	// fails the call with codes.Unavailable (DeadlineExceeded or Canceled
	// when the call's own context ended meanwhile). Under a rule of several
	// limits Err joins every limit's failure; a denial by a limit that did
	// decide is ResourceExhausted even when another one failed (see
	// service.LimitDecision.Err): Unavailable tells the two apart. When a key function, the
	// WithPolicyName function or a limiter panicked, or the service is missing (nil, or one service.New did not
	// build), Decision and Config are zero and the call fails with
	// codes.Internal. Either message is "rate limiter
	// unavailable" alone: Err is told to the observer, never to the client.
	// Under dry run the call proceeds.
	//
	// Err is also the call context's error when the call ended (its caller
	// left, its deadline passed) before it was decided, or while a limiter
	// that could not decide was asked: such a call takes nothing and fails
	// with DeadlineExceeded or Canceled, whatever a failure policy says,
	// with a Decision that denies. Under dry run it is decided and proceeds
	// as any other.
	Err error
	// Unavailable reports that the limiter of Config, the limit that
	// decided, could not decide: Decision is its failure policy's, and Err
	// holds why. A denial with Unavailable set fails the call with
	// codes.Unavailable (no quota spent), one without it with
	// codes.ResourceExhausted, whatever Err says; under dry run neither
	// fails. It is false for a call that failed with codes.Internal or
	// ended before its decision. As httplimit's Event.Unavailable.
	Unavailable bool
}

// Option configures the interceptors.
type Option func(*options)

type options struct {
	user   KeyFunc
	api    KeyFunc
	exempt Selector
	// exemptOwn is set while exempt is HealthAndReflection, the default,
	// which cannot panic: the call then asks it without a recovery.
	exemptOwn bool
	name      func(hotlimit.Config) string
	observe   func(Event)
	dryRun    bool
	messages  bool
	headers   bool
	// wait is set by WithWait, whose options waitOpts holds: the client
	// interceptors wait out a denial.
	wait     bool
	waitOpts []hotlimit.WaitOption
}

func newOptions(user KeyFunc, opts []Option) options {
	o := options{user: user, api: FullMethod, exempt: HealthAndReflection, exemptOwn: true, headers: true}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithUser sets how the user is found: [PeerIP] with no trusted proxy by
// default on the server, and none on the client (every call of the client
// shares one quota per method). A call for which f finds no key is limited
// as the empty user, so every keyless call shares one quota rather than going
// unlimited, as in httplimit. A nil f keeps the default.
func WithUser(f KeyFunc) Option {
	return func(o *options) {
		if f != nil {
			o.user = f
		}
	}
}

// WithAPI sets how the API is found: [FullMethod] by default. A call for
// which f finds no key, or an empty one, falls back to its full method, as
// FullMethod keys it (a method past 256 bytes by its first 256 and its
// digest). A nil f keeps the default.
func WithAPI(f KeyFunc) Option {
	return func(o *options) {
		if f != nil {
			o.api = f
		}
	}
}

// WithExempt sets the methods that are never limited, take nothing, get
// no RateLimit fields and are not reported to the observer:
// [HealthAndReflection] by default. A nil f exempts nothing. A call for
// which f panics is not exempt: it fails with codes.Internal, as with a
// panicking key function (it proceeds under dry run).
//
// Given no service (nil, or one service.New did not build), the
// interceptors serve the methods f exempts all the same, unreported, and
// fail every other call with codes.Internal, or let it through under
// [WithDryRun].
func WithExempt(f Selector) Option {
	return func(o *options) { o.exempt, o.exemptOwn = f, false }
}

// WithPolicyName names policies in the RateLimit fields and the QuotaFailure
// detail; the default is the derived name httplimit uses,
// "fixedwindow-3-1s". The name is computed once per Config and cached, so f
// must return the same name for the same Config. Characters outside
// printable ASCII become '_'; an empty name falls back to the default, as
// in httplimit. A call for which f panics fails with codes.Internal, as
// with a panicking key function. A nil f keeps the default. Two chained
// interceptors advertising equal Configs (one keyed by the peer, one by an
// API key, say) need names of their own, or a response lists two values of
// one name, which a client cannot tell apart.
func WithPolicyName(f func(hotlimit.Config) string) Option {
	return func(o *options) {
		if f != nil {
			o.name = f
		}
	}
}

// WithObserver calls f with every decision, on the call's goroutine, before
// the handler runs or the call is denied. f must be safe for concurrent use
// and should be quick. A call for which f panics fails with codes.Internal
// (it proceeds under dry run) rather than crash the server. A nil f removes
// the observer.
func WithObserver(f func(Event)) Option {
	return func(o *options) { o.observe = f }
}

// WithDryRun, when on, lets every call through: the interceptors still take
// from the limiter, set the RateLimit fields and report each decision to the
// observer (with Event.DryRun set), but never deny, never set the pushback
// trailer, and let calls through when the limiter fails. The service's own
// observer (hotlimit.WithObserver) does not know of it and counts the calls
// it lets through as denied; a limit in shadow mode (Config.Shadow) is
// counted as shadow_denied instead.
//
// A dry run never blocks: given no service (nil, or one service.New did not
// build), the interceptors let every call through all the same and tell
// the observer why (Event.Err), where without dry run they fail it with
// codes.Internal.
func WithDryRun(on bool) Option {
	return func(o *options) { o.dryRun = on }
}

// WithWait makes the client interceptors ([UnaryClientInterceptor],
// [StreamClientInterceptor]) wait for quota rather than fail a denied call:
// a call the service denies (ResourceExhausted) sleeps its RetryAfter, the
// least wait after which every limit of its rule admits it, and is asked
// again, until it passes and is sent, as [service.Service.WaitN] waits:
// a process that paces the calls it sends (to a bank's API, per merchant)
// rather than handle their denials. The call's context bounds the wait: a
// wait that would pass its deadline fails the call at once with the
// denial's status, as without WithWait (its RetryInfo says how long the
// quota takes), and a context that ends during the sleep fails it with
// its own status (Canceled or DeadlineExceeded), having taken nothing.
// A call that can never pass (RetryAfter hotlimit.Never), and one the
// service could not decide (Unavailable), fail at once as without it. The
// observer hears each ask: a denial while waiting, then the pass. Under
// [WithDryRun] nothing is denied, so nothing waits. There is
// no queue: calls waiting together are not sent in the order they came
// (see hotlimit.WaitN). opts are hotlimit.WaitN's, such as
// hotlimit.WithSleep, for a fake clock in tests. The server interceptors
// never wait: a server that held calls would spend its own resources on
// the clients it limits.
func WithWait(opts ...hotlimit.WaitOption) Option {
	return func(o *options) { o.wait, o.waitOpts = true, opts }
}

// WithStreamMessages, when on, also limits every message a server stream
// receives: after each RecvMsg, one Take under the API "RECV " followed by
// the full method ("RECV /pkg.Service/Method"), so that its rule is
// configured apart from the stream's start (which stays limited under the
// full method). The user is found again with the received message as req,
// in the stream's context as the stream gives it then (an interceptor
// chained before this one may give it another, per message); while that
// context stays the same (grpc-go's own streams keep theirs), the keys
// [Metadata] and [PeerIP] find in its metadata and peer are found once, and
// a method long enough to be keyed by its digest is digested once per
// stream. A
// denied message makes RecvMsg return the ResourceExhausted status, which the
// handler returns to end the stream; the message is dropped, and the
// stream's trailers carry the denial's RateLimit fields and pushback in
// place of the start's that it had not yet sent. A handler that goes on
// after a denial may: the trailers describe the stream's last denied
// message, set once the handler returns, the one whose status it most
// likely fails the stream with.
//
// Every received message is counted on top of the stream's start: the one
// request of a server-streaming call too, which generated code receives
// before the handler runs. Under a limit counted per pair or per API (the
// default scope), the start and the messages, whose APIs differ, have
// quotas of their own. Under a limit counted per user or for everyone
// (hotlimit.PerUser, hotlimit.Global) in a rule that applies to both, such
// as the default rule or a user's, they take from one quota: a
// server-streaming call takes two from it where a unary call takes one, and
// a stream of k messages 1 + k. Give the "RECV " API a rule whose limits
// differ from the start's to count them apart (see hotlimit.Scope: equal
// limits of one scope share one quota).
func WithStreamMessages(on bool) Option {
	return func(o *options) { o.messages = on }
}

// WithRateLimitHeaders, when off, stops the server interceptors from sending
// the RateLimit-Policy and RateLimit metadata on every response (it is on by
// default), which saves their allocations. Denials keep their details and
// the pushback trailer.
func WithRateLimitHeaders(on bool) Option {
	return func(o *options) { o.headers = on }
}
