// Package httplimit is net/http middleware that rate-limits requests with a
// [service.Service]: each request is one Take(user, api, 1) under the policy
// the service resolves for the pair, and every response tells the client
// where it stands.
//
//	limit := httplimit.New(svc,
//		httplimit.WithUser(httplimit.FirstOf(httplimit.Header("X-API-Key"), httplimit.ClientIP())),
//	)
//	http.ListenAndServe(addr, limit(mux))
//
// # Identity
//
// Two [KeyFunc] values name the pair. The user defaults to [ClientIP] (the
// peer's address, IPv6 grouped by /64; forwarding headers only from trusted
// proxies). The API defaults to the ServeMux pattern that serves the request
// ("GET /search"): r.Pattern when the middleware runs inside the mux, the
// pattern the mux would match when the middleware wraps the mux itself (even
// when an outer mux mounted it under a pattern of its own, such as "/api/"),
// and
// the URL path, cleaned as ServeMux cleans it, when there is no pattern (a
// handler that is not a ServeMux, or a request the mux does not route), so
// that "//login" or "/x/../login" is counted as "/login" (and a path past
// 256 bytes as its first 256 bytes and its digest, see [RoutePattern]).
// Patterns keep the number of APIs equal to
// the number of routes; a path fallback lets a client create one state per
// path it invents, which the limiters' Sweep reclaims once idle.
//
// Around a router other than ServeMux (chi, gorilla/mux, a handler of your
// own) that no ServeMux routes to, the API is the whole path, its
// parameters included: under a limit counted per pair or per API (the
// default scope is per pair), "/payments/1" and "/payments/2" each have a
// quota of their own, so a client that varies the parameter is never
// limited on that route. Give such a middleware, with [WithAPI], a KeyFunc
// that asks the router which route it will serve, as RoutePattern asks a
// ServeMux (or a constant, for a middleware around one route's handler),
// or give the rule a limit counted per user (hotlimit.PerUser), which
// every path shares.
//
// Every user key is tagged with its kind: "ip:192.0.2.1" from ClientIP,
// "header:x-api-key:k-123" from Header("X-API-Key") (a value past 256 bytes
// as "header-sha256:x-api-key:" and its digest, so that a key never holds a
// huge value), "context:T:alice" from
// ContextValue of a key of type T (as %T writes it: two types of one name
// in two packages of one name are one kind, see [ContextValue]), and a kind
// of your choice through [Tag].
// Keys of different sources thus never share a quota: a client that sends
// the API key "203.0.113.9" spends the quota of that API key, never that of
// the client at 203.0.113.9. Rules name users by their tagged keys
// (svc.ConfigureUser(httplimit.HeaderKey("X-API-Key", "premium"), ...)).
// The API is the route as the mux writes it, untagged, since that is what
// rules name.
//
// A KeyFunc that finds no key (a missing header) passes to the next in a
// [FirstOf] chain; a request for which the whole chain finds none is limited
// as the empty user, so every keyless request shares one quota rather than
// going unlimited.
//
// # Response headers
//
// Every response carries the two fields of the IETF draft "RateLimit header
// fields for HTTP" (draft-ietf-httpapi-ratelimit-headers), as Structured
// Field lists of one item each, except one to an allow-listed caller (a rule
// of [hotlimit.Unlimited]), which no quota limits, and one under a rule
// whose every limit is in shadow mode (Config.Shadow), which never denies:
//
//	RateLimit-Policy: "fixedwindow-3-1s";q=3;w=1
//	RateLimit: "fixedwindow-3-1s";r=2;t=1
//
// q is the policy's Limit and w its Window in seconds, rounded up and at least
// 1 (a sub-second window is advertised as a second: a client that paces
// itself at q per w never exceeds the policy). A token bucket or GCRA with a
// Burst other than its Limit advertises the burst instead, q=Burst, over the
// time its rate takes to grant it ("tokenbucket-5-1s-burst20";q=20;w=4):
// r can then reach Burst − 1, and never exceeds q. r is the number of requests
// that would still pass right now (Decision.Remaining) and t the seconds until
// the quota is back to full (Decision.ResetAfter, rounded up). A limit whose
// limiter could not decide (one on Redis that cannot reach it:
// service.LimitDecision.Err is set) keeps its RateLimit-Policy item, which is
// its Config's, and has no RateLimit item: its failure policy's decision
// knows nothing of the key (redislimit's FailOpen and FailClosed report r and
// t of 0, FailLocal one process's own count), and the draft requires r in
// every item, so none is made up. The legacy fields then carry
// X-RateLimit-Limit alone; a denial its failure policy made keeps the
// policy's Retry-After. When a response
// already carries one of these fields, for example from an outer httplimit
// middleware with a policy of its own, the new item is appended to the list.
// Two nested middlewares whose policies have equal Configs (one keyed by
// the client IP, one by an API key, over one service's rules, say) would
// append two items of one name, whose RateLimit items a client cannot tell
// apart: give one of them [WithPolicyName] (func(c hotlimit.Config) string
// { return httplimit.PolicyName(c) + "-per-key" }).
// The first item of each field that a middleware adds (after any an outer
// one added, so the first of the field only under the outermost) describes
// the policy that decided the request: for a rule of several limits, the one that denied it, or, when
// all passed it, the one with the least share left (see
// service.Service.TakePolicy) of those whose limiter decided, when one did
// (a limit that could not decide passed the request by its failure policy,
// whose count is not the limit's, see above), with its own q, r and t. A rule of several
// limits then lists each of its other limits, with its own q, r and t, in
// the order the rule asks them (see service.Service.TakeEach), as the draft
// lists several policies:
//
//	RateLimit-Policy: "fixedwindow-100-1m";q=100;w=60
//	RateLimit-Policy: "tokenbucket-10-1s-burst20";q=20;w=2
//	RateLimit: "fixedwindow-100-1m";r=40;t=55
//	RateLimit: "tokenbucket-10-1s-burst20";r=10;t=1
//
// so an item never pairs one limit's quota with another's remaining count,
// and a client can pace itself within each limit of the rule. Two limits of
// a rule that differ only in their scope would share a name: the one that
// counts per user, api or everyone is then named with its scope too, as
// "fixedwindow-10-1m-user", in every response of the rule. Limits in
// shadow mode are not advertised, even when the rule has no other (their
// numbers would pace clients by a limit nobody enforces). The service's
// observer (hotlimit.WithObserver) still counts their decisions, as
// shadow_denied where they would deny; the Event of [WithObserver] tells of
// a limit in shadow mode only under a rule whose every limit is in shadow
// mode, as its Config (beside an enforced limit, the Event is that
// limit's). The legacy fields, which hold one
// number each, carry the deciding policy's. Retry-After is the rule's: a
// denied request waits until every limit admits it, the limit that denied
// it and those the rule asks after that one (under 1 per second and 1 per
// minute, the second request of a minute, denied by the per-second limit,
// is told to wait out the minute; see service.Service.Take for the limits
// it does not ask); each limit's
// item in RateLimit reads its own r, and its t says when it is full again.
//
// A denied request gets 429 Too Many Requests with Retry-After in whole
// seconds, rounded up so that it is never earlier than the limiter's
// Decision.RetryAfter and at least 1 (without Retry-After when no wait lets
// it pass, a RetryAfter of hotlimit.Never, which the body then says), and
// an RFC 9457 application/problem+json body; the
// denial is replaceable with [WithDenyHandler]. The service is asked with
// the request's context, which bounds a limiter that waits on Redis; when
// such a limiter cannot decide and its failure policy denies, the answer is
// 503 Service Unavailable rather than 429, since the client spent no quota,
// and the error is in [Event].Err (a denial by another limit of the rule,
// which did decide, stays 429). A request whose context has already ended
// when it reaches the middleware (its client left, an outer timeout passed)
// takes nothing and is not served: it would spend a quota for a response
// nobody reads, and when its key is shared (a keyless client, a limit of
// the API's or everyone's scope) a client that sends requests and drops them
// at once would spend that quota for all its sharers at no cost to itself.
// It is answered 503 with its context's error in Event.Err, and so is a
// request that ended while a limiter that could not decide was asked,
// whatever its failure policy decided (a pass is not served; a denial's
// numbers were no limiter's), with no RateLimit fields; the limits of its
// rule that counted it give it back. A request that ends after the decision
// has spent its quota and is served as usual; its handler sees the ended
// context. [WithLegacyHeaders] adds
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (the same
// numbers as q, r and t; Reset is in seconds from now, not a timestamp).
// [WithDryRun] only sets the RateLimit fields and reports the decisions: every
// request reaches the handler, which is how a new policy is tried on live
// traffic before it is enforced.
//
// # Giving a request back
//
// The middleware's take is final: it keeps no receipt, so a handler behind
// it cannot give its request back when its work fails (a payment whose
// backend failed), and a handler that also calls
// [service.Service.TakeReceipt] counts every request twice. For a route
// whose failed requests should not count, exempt it from the middleware
// ([WithExempt]) and let its handler decide: TakeReceiptContext under the
// user a [KeyFunc] of this package names (so that the rules name users as
// the middleware's do) and the route's pattern, then RefundContext of the
// receipt when the work fails, as ExampleWithExempt_giveBack does. Such a
// route's responses carry no RateLimit fields but those its handler writes.
//
// # CORS preflight
//
// Before a cross-origin request that is not "simple" (a JSON POST, one with
// an Authorization header) a browser sends a preflight: OPTIONS with Origin
// and Access-Control-Request-Method. The middleware limits it as any other
// request. Under a pattern without a method ("/api/data") it spends one from
// the route's quota: a client with one request left spends it on the
// preflight, and its real request is denied; a denied preflight gets a 429
// without CORS headers, which the browser reports to the page as a network
// error it cannot read. (Under a pattern with a method, "POST /api/data",
// the mux answers OPTIONS with 405, and the preflight counts under the path
// "/api/data", apart from the route's quota.) Preflights are not exempt by
// default because any client can send those two headers: the exemption would
// be an unlimited way into every route registered without a method, whose
// handler serves OPTIONS as it serves GET.
//
// The arrangement that works is the CORS middleware outside this one:
//
//	http.ListenAndServe(addr, cors(limit(mux)))
//
// A CORS middleware answers preflights itself (rs/cors does unless told to
// pass them on), so they never reach the limiter, and it adds its headers
// to every response, 429 included, so that the page can read a denial (its
// exposed headers should list RateLimit, RateLimit-Policy and Retry-After).
// When preflights are answered behind the middleware (by a route of the
// mux, say), [WithExempt]([IsPreflight]) exempts them; use it only when
// nothing behind the middleware serves an OPTIONS request as it serves the
// real one.
//
// # Policy names
//
// The name in both fields is derived from the resolved [hotlimit.Config]:
// the algorithm, the limit and the window, as in "tokenbucket-5-1s" or
// "slidinglog-100-1m", and a burst other than the limit, as in
// "tokenbucket-5-1s-burst20". A derived name needs no registry that could drift from
// the rules; it is the same on every replica and across restarts; it stays
// the same while the policy does (the draft wants RateLimit-Policy consistent
// over a sequence of responses) and changes exactly when the policy changes,
// so a client that remembers policies by name is never misled; and two rules
// with equal Configs are one policy to the client. [WithPolicyName] replaces it with names of your own ("free",
// "premium"), computed from the Config.
//
// # Observability
//
// [WithObserver] calls a function with an [Event] for every decision: the
// user, the API, the Config, the policy name and the Decision. Counting
// allowed and denied requests per policy in Prometheus or OpenTelemetry is one
// counter increment in that function; this package depends on neither.
//
// # Panics
//
// The middleware recovers no panic of the functions it is given (the key
// functions, WithExempt's, WithPolicyName's, the observer, the deny
// handler): like a panic of the handler behind it, it reaches net/http,
// which logs it and drops the connection (or resets the HTTP/2 stream), so
// the client gets no response. A key function or the exempt function runs
// before anything is taken; the policy name function (asked for each
// Config until it returns a name, which is then kept) and the observer run
// after the decision, so a panic of either on an allowed request leaves
// its quota spent on a request that is not served. A denied request took
// nothing, whatever panics.
//
// A nil *http.Request, which net/http never passes, panics, as it does in
// the standard library's handlers: given to the middleware, to
// [IsPreflight] or to a [KeyFunc] of this package.
//
// # Cost
//
// The middleware adds one TakeEach on the service, a few map
// assignments in the response header and, under a rule of one limit, two
// allocations: the per-request header text (one string holding every
// number) and the slice that backs the header values. Each other limit of a
// rule of several adds its RateLimit item's text and the growth of both
// fields' value lists, and the service's own work for it. ClientIP's tagged key is built once per client seen lately
// (a few hundred are remembered), so a returning client costs no allocation
// for it; a new one costs one. The policy field and the limit are formatted once per
// Config. The default API of a middleware that wraps a *http.ServeMux is
// found by asking the mux (RoutePattern), which costs what
// ServeMux.Handler costs: an allocation per request in current Go
// releases, several for a path the mux does not route. A middleware
// registered inside the mux reads r.Pattern instead, which costs nothing.
package httplimit
