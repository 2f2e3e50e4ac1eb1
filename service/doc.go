// Package service decides allow(user, api) under per-user, per-API and
// per-(user, API) policies.
//
// A Service resolves the rule of a request most-specific first:
//
//	(user, api) override > api override > user override > default
//
// and asks the limiter of that rule. A rule is one limit or several ([Limits]);
// with several, a request passes only when every limit passes. Equal limits
// share one limiter: the service builds one limiter per distinct
// [hotlimit.Config] and keys it by the (user, api) pair, so every pair keeps
// independent state whatever bytes its names contain, and a rule of several
// limits is built from the same shared limiters.
//
// The whole policy is a plain value, [Rules], with a strict JSON form read by
// [LoadRules] and written by encoding/json. [Service.Replace] installs new
// rules at once; [Service.WatchFile] and [Service.WatchFileWith] do so
// whenever a file changes, the latter reporting each reload and the rules
// whose API no route matches ([UnmatchedAPIs]). Pairs whose rule did not
// change keep their state across a Replace. The Configure* methods are
// one-limit shortcuts over the same mechanism. [Service.TakeContext] passes a
// request's context to limiters that wait on Redis, and [Service.Close]
// closes them.
//
// Each limit of a rule has a [hotlimit.Scope] that says whose quota it counts:
// the pair's (the default), the user's across apis, the api's across users,
// or one for everyone. The quota is the limit's, not the rule's: equal limits
// of one scope in two rules count one quota (see [hotlimit.Scope]). A rule may
// mix scopes, as in "10
// per minute per user and 3 per minute per pair"; its limits are taken all or
// nothing, so a request one limit denies spends no other limit's quota, nor
// does one during which a limit panics (its clock, a factory's limiter): the
// limits asked before it give back what they took, even past one whose
// refund panics too, and the panic goes on. The observer hears of a request
// once it is decided: a panic of the observer's leaves it counted.
// [Service.TakePolicy] names the limit that decided, with that limit's own
// decision, and [Service.TakeEach] lists every limit with its own, for a
// caller that advertises each (as httplimit's RateLimit fields do).
// [Service.Wait] and [Service.WaitN] sleep until the rule admits a request,
// for a process that paces the calls it sends instead of being denied.
//
// [Service.TakeReceipt] is Take with a [Receipt] of what each limit of the
// rule took, and [Service.Refund] gives it back, each limit under its own
// key exactly as its limiter's Refund gives back its own receipt (see
// [hotlimit.Refunder]): a payment endpoint whose backend failed gives the
// request back, and it counts against no limit. A limit that took nothing
// (it denied, it is in shadow mode and would have denied, or its failure
// policy passed the request undecided) is not asked, and a refund after a
// Replace goes to the limiters that took, never to those built since.
// [Service.TakeReceiptContext] and [Service.RefundContext] pass a context
// to the limiters on Redis. A refund is not a decision: the observer does
// not hear of it.
//
// For operating it: [hotlimit.WithObserver] reports every decision with the
// rule that made it and its outcome (package hotlimitprom and hotlimitotel
// export them as metrics; a nil Observer, or one holding a nil pointer or
// function, such as a nil hotlimit.ObserverFunc, reports nothing); a limit with Shadow set decides and counts but
// never denies, reporting what it would have denied (and [WithShadowHook]
// who would have been denied); a rule of
// [hotlimit.Unlimited] is an allow-list entry that keeps no state;
// [Service.TakeWith] decides one call under a limit given with it; and
// [hotlimit.WithMaxKeys] caps the keys each limiter holds. The cap sizes each
// limiter's map for its keys up front, as the service builds the limiter,
// up to 1<<20 keys, and the map takes that size as keys come: 32 MB per
// limiter at a cap of a million (about 32 bytes per key), 4.5 MB at 100,000,
// 147 KB at 1024 or less, for every distinct limit of the rules. Without a
// cap, each such limiter takes about 6 KB before its first key (4 KB of it
// its map's two pointers per shard, to the shard's array and to its
// writers' state, which are allocated on the shard's first key), and its
// map grows a shard at a time as keys come.
//
// The rules live in an immutable snapshot behind an atomic pointer; Replace
// and Configure* build a new snapshot and swap it in, so Allow and Take never
// lock, and a decision that starts after a Replace returns uses the new
// rules. A decision resolves its rule from the snapshot's plain maps and asks
// the rule's limiter: one lock-free map lookup and a CAS for a pair seen
// before, with no allocation and no per-pair state besides the limiter's,
// which the limiters' eviction ([hotlimit.WithAutoSweep], Sweep) frees.
// (One exception: when a rule of several limits denies and gives a limiter
// back a take, or [Service.Refund] gives one back, and that leaves the key
// as a new key's, a token bucket full or a fixed window's or a sliding
// counter's counts zero, the key is evicted, as tokenbucket, fixedwindow
// and slidingcounter document under Refunds, and its next request
// allocates the key's cell again.)
//
// State keys are printable: "3:zed|GET /pay" for the pair (zed, GET /pay)
// (the user's length makes the key injective whatever bytes the names hold),
// "user|zed", "api|GET /pay" and "global" for the other scopes. They are the
// keys a factory's limiters see, such as redislimit's Redis keys.
package service
