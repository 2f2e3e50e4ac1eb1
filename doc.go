// Package hotlimit is the shared vocabulary of a lock-free, allocation-free keyed
// rate limiter: the [Limiter] interface every algorithm implements, the [Decision]
// it returns, the [Config] that names a policy and the [Option] values every
// constructor accepts.
//
// The algorithms live in sub-packages, one each:
//
//   - tokenbucket: continuous refill, bursts up to Burst (default Limit); one
//     64-bit word per key.
//   - gcra: the same model as one theoretical arrival time per key.
//   - fixedwindow: at most Limit per aligned window; one 64-bit word per key.
//   - slidingcounter: the previous window's count weighted by its overlap;
//     one 64-bit word per key, an error bound stated and tested.
//   - slidinglog: exactly at most Limit in any window; Limit timestamps per key.
//   - unlimited: passes every request and keeps no state, for [Unlimited]
//     (an allow-list entry in a service's rules).
//
// Package composite combines limiters ("10 per second and 1000 per day").
// Package service resolves per-user, per-API and per-(user, API) rules, each
// of one or several limits, loadable from JSON and replaceable atomically, and
// shares one limiter per distinct Config. Package httplimit is net/http
// middleware over a service. Modules of their own, so that this one keeps a
// single dependency, hold the rest: grpclimit (gRPC interceptors), redislimit
// (the same limiters on Redis, shared by several instances; give a service
// redislimit.Factory through [WithFactory]), hotlimitprom and hotlimitotel
// (an [Observer] each, for Prometheus and OpenTelemetry: [WithObserver], and
// [Observers] to report to both) and envoyrls (an Envoy rate limit service).
//
// Every limiter is a [Refunder]: [Refunder.TakeReceipt] returns a [Receipt]
// that [Refunder.Refund] gives back. [Wait] and [WaitN] block until a request
// passes or a context ends. [CoarseClock] is an opt-in cheaper clock.
//
// Every decision is made by one lock-free map load and a compare-and-swap loop on
// the key's state; a key's first request allocates its state, later ones allocate
// nothing. All limiters are safe for concurrent use by any number of goroutines.
package hotlimit
