// Package grpclimit is gRPC middleware that rate-limits calls with a
// [service.Service], the counterpart of httplimit: each call is one
// Take(user, api, 1) under the rule the service resolves for the pair, so
// every rule, scope, JSON rule file, reload and backend (Redis through the
// factory) works unchanged, and a denied call tells the client exactly when
// to come back.
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc)),
//		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc)),
//	)
//
// It is a module of its own (github.com/hotlimit/hotlimit/grpclimit), so that
// users of the core library never download grpc-go.
//
// # Identity
//
// The API defaults to the full method, "/pkg.Service/Method"; the user to
// the peer's IP address ([PeerIP]: IPv6 grouped by /64, x-forwarded-for
// metadata believed only from trusted proxies and read right to left), found
// by the same code as httplimit.ClientIP. [WithUser] and [WithAPI] take
// [KeyFunc] values: [Metadata] (an API key, a tenant), [FromRequest] (a
// field of the request message), [ContextValue] (what an authentication
// interceptor stored), chained with [FirstOf]. User keys carry their kind as
// in httplimit ("ip:192.0.2.1", "header:x-api-key:k-1", "context:T:alice"
// from ContextValue of a key of type T, as %T writes it: two types of one
// name in two packages of one name are one kind, see [ContextValue]), so
// keys from two sources never collide, and one rule set names the same callers over HTTP
// and gRPC ([MetadataKey] equals httplimit.HeaderKey). A key that the
// client writes, a metadata value or a request field past 256 bytes, is kept
// as its SHA-256, so that no key holds a huge value.
//
// A call for which the user KeyFunc finds no key is limited as the empty
// user: every keyless call shares one quota rather than going unlimited. An
// API KeyFunc that finds none, or an empty one, falls back to the full
// method, keyed as [FullMethod] keys it.
//
// A method the server does not register never reaches an interceptor:
// grpc-go answers it Unimplemented first, so it takes nothing. A server
// with grpc.UnknownServiceHandler (a proxy that forwards every method)
// passes such calls to the stream interceptor, which limits them as any
// stream, under the method the client sent: under a rule counted per pair
// or per API, each invented method then has a quota of its own (its state
// reclaimed by the limiters' Sweep once idle), so give such a server a
// limit per user or global too; and a method past 256 bytes is keyed by
// its first 256 bytes and its digest, so that a key never holds a huge
// method.
//
// Health checks and reflection are exempt by default ([HealthAndReflection];
// change it with [WithExempt]).
//
// # Streams
//
// A stream takes one when it starts, under its full method, with req nil,
// whatever it then sends or receives: a stream opened and closed at once
// has spent one, unless its caller had left before it was decided.
// [WithStreamMessages] also limits every message it receives, under the API
// "RECV /pkg.Service/Method", so that messages have a rule of their own,
// the one request of a server-streaming call included: under a limit
// counted per user or for everyone that applies to both APIs (the default
// rule's, a user's), such a call takes two from that quota (see
// [WithStreamMessages]). A denied message fails the stream as a denied call
// fails, its trailers carrying that rule's fields and pushback, not the
// stream start's (the last denied message's, when the handler drops denied
// messages and goes on).
//
// # Denials
//
// A denied call fails with codes.ResourceExhausted, a message naming the
// policy and the wait, and two details of google/rpc/error_details.proto:
//
//   - google.rpc.RetryInfo, retry_delay = Decision.RetryAfter rounded up to
//     the millisecond and at least 1 ms (absent when no wait helps, that is
//     RetryAfter is hotlimit.Never);
//   - google.rpc.QuotaFailure, one violation: subject is the kind of the user
//     key ("ip", "header:x-api-key"; "none" for a keyless call, "user" for
//     a key of the application's own without a colon; see [KeyFunc]), so
//     the caller learns which identity ran out without the server echoing it,
//     or "api" or "global" for a policy of that scope (see hotlimit.Scope),
//     whose quota every caller of the method, or every caller, shares;
//     description the policy ("policy \"fixedwindow-3-1s\" (3 requests per
//     1s)", with ", bursts of 20" for a token bucket or GCRA whose burst is
//     not its limit, and ", shared by every user" or the like for a policy
//     of another scope than the pair's), quota_id its name and quota_value the q of its
//     ratelimit-policy item: its burst when it sets one, else its limit.
//
// Its trailers carry grpc-retry-pushback-ms (gRFC A6): a client whose
// service config has a retryPolicy listing RESOURCE_EXHAUSTED waits that
// long before its next attempt, instead of its own backoff, and does not
// retry at all on -1 (no wait helps). A denial sends no response header, so
// the response is Trailers-Only: a client that has received headers has
// committed the call and can no longer retry it.
//
// # Giving a call back
//
// An interceptor's take is final: it keeps no receipt, so a handler behind
// it cannot give its call back when its work fails (a payment whose backend
// failed), and a handler that also calls [service.Service.TakeReceipt]
// counts every call twice. For a method whose failed calls should not
// count, exempt it from the interceptor ([WithExempt], keeping
// [HealthAndReflection] exempt too) and let its handler decide:
// TakeReceiptContext under the user a [KeyFunc] of this package names (so
// that the rules name users as the interceptor's do) and the full method,
// then RefundContext of the receipt when the work fails, as
// ExampleWithExempt_giveBack does.
//
// # Response metadata
//
// Every response to a call that a limiter decided carries two metadata
// entries, but one to an allow-listed caller (a rule of
// [hotlimit.Unlimited], which no quota limits) and one under a rule whose
// every limit is in shadow mode (which never denies: its numbers would pace
// clients by a limit nobody enforces); an exempt method, a limiter
// that failed (codes.Internal) and a call that ended before its decision
// (see Failures) carry none. The entries are the items of the IETF draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers)
// exactly as httplimit formats them (the same code):
//
//	ratelimit-policy: "fixedwindow-3-1s";q=3;w=1
//	ratelimit: "fixedwindow-3-1s";r=2;t=1
//
// The first value of each describes the policy that decided the call, with
// its own q, r and t: for a rule of several limits, the one that denied it
// or, when all passed it, the one with the least share of its capacity left
// (see service.Service.TakePolicy) of those whose limiter decided, when one
// did (a limit that could not decide passed the call by its failure policy,
// whose count is not the limit's, see below). A rule of several limits then lists its
// other limits, a value each with its own q, r and t, in the order of
// service.Service.TakeEach (limits in shadow mode are not advertised), so
// that a client can pace itself within each limit of the rule; as in
// httplimit, of two limits that differ only in their scope, the one not per
// pair is named with its scope too ("fixedwindow-10-1m-user"). A limit
// whose limiter could not decide (one on Redis that cannot reach it:
// service.LimitDecision.Err is set) keeps its ratelimit-policy value, which
// is its Config's, and has no ratelimit value, as in httplimit: its failure
// policy's decision knows nothing of the key (redislimit's FailOpen and
// FailClosed report r and t of 0, FailLocal one process's own count), and
// the draft requires r in every item, so none is made up. They are
// sent in the response headers of a call that proceeds and in the trailers
// of a denied one. They are given to the call once its handler has returned (a
// stream's when it sends its first message or its headers), never before:
// a call that proceeds but then fails, in its handler or in an interceptor
// after this one (another limit that denies it), carries them in its
// trailers, so that its response stays Trailers-Only and the client's retry
// policy can still retry it (gRFC A6). So does one whose handler panics,
// when a recovery interceptor outside this one answers it: the interceptors
// recover no panic of the handler, but set the trailers as it unwinds
// through them. [MiddlewareLimiter] cannot wait for
// the handler and sets them at once. No gRPC standard exists for this: gRFC A6 defines only the
// pushback, and google.rpc.QuotaFailure only explains a failure. The draft's
// names are used because gRPC metadata are HTTP/2 header fields, so a proxy,
// a gateway (grpc-gateway, Envoy's transcoder) or a client that already
// reads them from httplimit reads them here unchanged, and a name of our own
// would be one more to learn. [WithRateLimitHeaders](false) turns them off.
//
// # Failures
//
// The interceptors never panic. A limiter on a backend that cannot decide
// (Redis down, see redislimit's failure policies) lets its failure policy
// decide: a pass goes on, and a denial fails the call with
// codes.Unavailable, the code for a dependency that may come back, not
// ResourceExhausted, as the caller spent no quota (DeadlineExceeded or
// Canceled when the call's own deadline passed, or its caller left, while
// the backend decided). Such a denial's trailers carry the failure policy's
// decision's wait as a denial's do: the pushback is its RetryAfter (when
// redislimit asks Redis again), which a retry policy listing UNAVAILABLE
// waits, and so does its google.rpc.RetryInfo detail, when a wait helps; the RateLimit fields carry the limit's ratelimit-policy value but
// no ratelimit value (see Response metadata), whether its failure policy
// passed the call or denied it. A limiter that fails
// otherwise (a panic in a limiter the factory built, in a key function,
// in a [Selector] or in the observer, a nil service or one service.New
// did not build (see service.Service.Built), or a stream interceptor called without a
// stream) fails the call with codes.Internal and no metadata. Either
// message is "rate limiter unavailable" and nothing more: the error, which
// names the server's own infrastructure (a Redis address, a refused
// password, a panic's value), stays on the server, in Event.Err, for the
// observer to log. Under [WithDryRun] the call proceeds. A dry run never
// blocks: under [WithDryRun], given no service, the interceptors let every
// call through all the same and tell the observer why. Exempt methods are
// served all the same, unreported (see [WithExempt]).
//
// A call whose context has already ended when it is to be decided (its
// caller left, its deadline passed) takes nothing and fails with
// DeadlineExceeded or Canceled: it will not be served, and spending a quota
// for it would let a caller that cancels its calls at once spend a shared
// quota (a keyless caller's, a limit of the method's or everyone's scope) at
// no cost to itself. So does a call that ended while a limiter that could
// not decide was asked, whatever its failure policy decided, with no
// ratelimit metadata (a denial's numbers were no limiter's), and the limits
// of its rule that counted it give it back. A call that
// ends after its decision has spent its quota; its handler sees the ended
// context.
//
// # Observability and dry run
//
// [WithObserver] calls a function with an [Event] per decision (user, API,
// Config, policy name, Decision); [WithDryRun] takes, reports and sets the
// metadata but never denies, to try a policy on live traffic.
//
// # Clients and go-grpc-middleware
//
// [UnaryClientInterceptor] and [StreamClientInterceptor] limit a caller
// before its calls leave the process, failing a denied call with the same
// status, or, given [WithWait], sleeping until the quota admits it and then
// sending it. Nothing retries a call they fail: grpc-go's retry policy (a
// service config's retryPolicy, with its pushback) retries within the call
// the interceptor would have sent, which a denied call never reaches. A
// caller that should come back reads the wait from the status's
// RetryInfo. [MiddlewareLimiter] adapts a service to go-grpc-middleware v2's
// ratelimit.Limiter, for its server interceptors only (under its client
// interceptors it is not told which call is sent); that middleware turns
// the error into a text message, so its clients lose the RetryInfo and
// QuotaFailure details (the metadata and the pushback trailer still
// arrive).
//
// # Cost
//
// An allowed unary call adds the user key (for an IP address, one
// allocation the first time; a client seen lately reuses its key, while a
// peer that is not an IP address, such as a Unix socket's, costs one each
// call, and so does a trusted proxy's forwarding entry, which grpc-go's
// metadata.ValueFromIncomingContext copies), one TakeEach, and the RateLimit metadata: under a rule of one
// limit, one allocation for the RateLimit item's text and value, two for the
// metadata map, plus what grpc-go's SetHeader does with them (a rule of
// several limits adds a copy of their decisions, and for each other limit
// its item's text and the growth of both entries' value lists).
// BenchmarkUnary measures it.
package grpclimit
