// Package service decides allow(user, api) under per-user, per-API and
// per-(user, API) policies.
//
// A Service resolves the policy of a request most-specific first:
//
//	(user, api) override > api override > user override > default
//
// and asks the limiter of that policy. Equal policies share one limiter: the
// service builds one limiter per distinct [hotlimit.Config] and keys it by the
// (user, api) pair, so every pair keeps independent state whatever bytes its
// names contain.
//
// The rules live in an immutable snapshot behind an atomic pointer; Configure*
// copies it, changes the copy and swaps it in, so Allow and Take never lock.
// Allow on a pair seen before allocates nothing: the pair's resolved route (its
// limiter and key) is cached in a lock-free map and revalidated with one
// pointer comparison against the current snapshot.
package service
