// Package envoyrls is an Envoy rate limit service
// (envoy.service.ratelimit.v3.RateLimitService) that decides with hotlimit's
// algorithms, in memory or, through a hotlimit.Factory such as
// redislimit.Factory, on Redis. The command hotlimitd serves it.
//
// # Serving
//
// A program serves a [Server] on a grpc.Server of its own as hotlimitd does:
// pb.RegisterRateLimitServiceServer(g, srv) on a server made with
// grpc.ForceServerCodecV2([Codec]()), and, once g has stopped answering
// (GracefulStop), [Server.Close] to give back what the limiters hold ahead of
// their backend (see ExampleServer_grpc). hotlimitd also bounds the stop:
// GracefulStop waits for the calls in flight and for connections still in
// their handshake, so it gives the calls a time (-drain) and then calls
// Stop, and builds g with grpc.ConnectionTimeout, which bounds how long a
// connection that never sends its preface can hold either up. [Server.JSONHandler] and
// [Server.ConfigHandler] serve its HTTP endpoints, [Server.Reload] or
// [Server.WatchDir] change its rules.
//
// # Configuration
//
// [LoadDir] reads the reference server's (envoyproxy/ratelimit) YAML
// unchanged, one file per domain, and adds three optional keys under
// rate_limit: algorithm (TokenBucket, GCRA, FixedWindow, SlidingLog,
// SlidingCounter; FixedWindow by default, windows aligned on the Unix epoch
// as in the reference), burst (TokenBucket and GCRA) and window (any Go
// duration, in place of unit). Matching is the reference's: at each level
// of a descriptor the entry's key_value, then the level's first wildcard
// pattern, then the bare key; a rule applies only at the last entry. The
// values a share_threshold wildcard matches share one counter; other values
// count apart. quota_mode is honoured; detailed_metric, value_to_metric and
// metadata are accepted and have no effect (metrics are per rule).
//
// # Requests
//
// [Server.ShouldRateLimit] answers as the reference does:
//
//   - domain and one descriptor at least are required, every descriptor
//     non-nil and every entry key (else InvalidArgument); at most [MaxDescriptors] descriptors of
//     [MaxEntries] entries each. Serve with grpc.ForceServerCodecV2([Codec])
//     to refuse a request past those bounds before it is decoded.
//   - hits_addend 0 or unset counts 1; a descriptor's own hits_addend wins,
//     an explicit 0 only checks; is_negative_hits gives the hits back. On a
//     32-bit platform a hits_addend or a limit's requests_per_unit above
//     2^31-1, which its int cannot hold, is InvalidArgument.
//   - a descriptor's limit overrides the rule's rate, with the rule's
//     algorithm (FixedWindow without a rule), never in shadow mode; a token
//     bucket or GCRA override takes the limiter options' default burst
//     (hotlimit.WithBurst), else its own requests_per_unit, not the rule's
//     burst, which is the rule rate's. Each
//     distinct override has a limiter of its own, kept as long as the
//     server: past 4096 of them a request with yet another is
//     ResourceExhausted. With a key cap in the limiter options
//     (hotlimit.WithMaxKeys(n), given to [WithLimiterOptions]), each such
//     limiter's table is sized for min(n, 2^20) keys up front (32 MB at
//     2^20, 4.5 MB at 100,000, 147 KB at 1024 or less, once a flood of keys
//     fills it), so the overrides are bounded by their tables too: at most
//     as many as four tables of 2^20 keys, about 128 MB, hold (4
//     overrides at n = 1,000,000, 28 at 100,000, 894 at 1024 or less;
//     past 2^20 keys a table grows as keys come, each override's with it,
//     and the bound stays 4).
//     The bound holds with a factory too, which gets the cap: redislimit's
//     FailLocal fallback sizes its tables the same way. On Redis each
//     override's limiter also holds its batching goroutines (two with
//     redislimit's default WithBatch): 4096 overrides hold some 8,200
//     goroutines and some 60 MB of heap and stacks, which clients sending
//     distinct limits can make them take (Envoy sends an override only
//     where a route's rate limit action sets one).
//   - statuses are 1:1 with the descriptors, in order. No rule or an unknown
//     domain: OK without current_limit. Unlimited: OK with limit_remaining
//     MaxUint32. current_limit is the rule's (or the descriptor's own)
//     requests_per_unit, as the reference reports it, and so is
//     RateLimit-Limit ([HeadersReference]); for a token bucket or GCRA,
//     limit_remaining counts down from its burst, the limiter options'
//     default (hotlimit.WithBurst) when it sets none, and so do the
//     observer's near-limit share, the metrics' near_limit and the draft
//     headers' q ([HeadersDraft]). A rule named in a matched rule's replaces does not apply.
//     requests_per_unit 0 is over the limit for every hit.
//   - shadow mode: an over-limit descriptor is counted and observed as
//     [hotlimit.OutcomeShadowDenied] and answered OK. quota_mode: the request
//     is over when all its quota-mode descriptors are.
//   - every descriptor counts its hits even when another is over (the
//     reference's behaviour), unless [WithAllOrNothing]. Within a descriptor
//     a request is all or nothing: hits over the limit are not counted.
//
// Each distinct policy has one limiter, kept across [Server.Reload] while a
// rule still names it, so unchanged rules keep their counts. A descriptor's
// counter key is its domain and entries, each length-prefixed, so distinct
// descriptors never share a counter; an entry's key or value longer than 256
// bytes (a client's header, say) counts under its SHA-256, so that a counter
// key holds at most some 33 KB (64 entries) whatever a request carries.
package envoyrls
