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
// rules at once; [Service.WatchFile] does so whenever a file changes. Pairs
// whose rule did not change keep their state across a Replace. The
// Configure* methods are one-limit shortcuts over the same mechanism.
//
// The rules live in an immutable snapshot behind an atomic pointer; Replace
// and Configure* build a new snapshot and swap it in, so Allow and Take never
// lock. Allow on a pair seen before allocates nothing: the pair's resolved
// route (its limiter and key) is cached in a lock-free map and revalidated
// with one pointer comparison against the current snapshot.
package service
