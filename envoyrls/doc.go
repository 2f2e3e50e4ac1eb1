// Package envoyrls is an Envoy rate limit service
// (envoy.service.ratelimit.v3.RateLimitService) that decides with hotlimit's
// algorithms, in memory or on Redis.
//
// It loads the reference server's (envoyproxy/ratelimit) YAML unchanged, one
// file per domain, and adds three optional keys under rate_limit: algorithm
// (TokenBucket, GCRA, FixedWindow, SlidingLog, SlidingCounter; FixedWindow
// by default, windows aligned on the Unix epoch as in the reference), burst
// (TokenBucket and GCRA) and window (any Go duration, in place of unit).
package envoyrls
