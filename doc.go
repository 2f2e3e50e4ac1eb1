// Package hotlimit is the shared vocabulary of a lock-free, allocation-free keyed
// rate limiter: the [Limiter] interface every algorithm implements, the [Decision]
// it returns, the [Config] that names a policy and the [Option] values every
// constructor accepts.
//
// The algorithms live in sub-packages, one each:
//
//   - tokenbucket: continuous refill, bursts up to Limit; one 64-bit word per key.
//   - fixedwindow: at most Limit per aligned window; one 64-bit word per key.
//   - slidinglog: exactly at most Limit in any window; Limit timestamps per key.
//
// Package service resolves per-user, per-API and per-(user, API) policies and
// shares one limiter per distinct Config.
//
// Every decision is made by one lock-free map load and a compare-and-swap loop on
// the key's state; a key's first request allocates its state, later ones allocate
// nothing. All limiters are safe for concurrent use by any number of goroutines.
package hotlimit
