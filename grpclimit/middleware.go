package grpclimit

import (
	"context"
	"fmt"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/grpc"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// MiddlewareLimiter adapts svc to the Limiter interface of go-grpc-middleware
// v2's interceptors/ratelimit, for servers already built on that middleware:
//
//	ratelimit.UnaryServerInterceptor(grpclimit.MiddlewareLimiter(svc))
//
// Limit finds the method with grpc.Method(ctx) and the keys with the
// KeyFuncs (req nil, since the middleware does not pass the request), takes
// one, sends the RateLimit metadata and, on a denial, the pushback trailer,
// and returns the denial's status error.
//
// Limit returns before the handler runs, so it sets the RateLimit metadata
// of a call it lets through as response headers at once. A failure of the
// handler (or of an interceptor after the middleware) is then sent after
// those headers, not Trailers-Only, and a client's retry policy does not
// retry it (gRFC A6: a call whose headers arrived is committed), whatever
// its status. [UnaryServerInterceptor] and [StreamServerInterceptor] wait
// for the handler and keep such failures retryable; with MiddlewareLimiter,
// [WithRateLimitHeaders](false) does (denials keep their pushback).
//
// It is for the middleware's server interceptors only. Its
// UnaryClientInterceptor and StreamClientInterceptor do not tell Limit
// which call is sent. In a client's own context grpc.Method finds no
// method, so every call is limited under the empty API, all methods sharing
// one quota, and no exemption applies. In the context of a call being
// served (a handler calling another service) it finds that call, so the
// calls sent are limited under its method and its caller's key, and their
// RateLimit metadata and pushback go to its response. Limit a client with
// [UnaryClientInterceptor] and [StreamClientInterceptor] instead.
//
// The middleware flattens that error into the text of a new
// ResourceExhausted status, so the client gets neither the RetryInfo nor the
// QuotaFailure details; only the message text and the metadata survive. The
// code does not survive either: a call the limiter could not decide
// (Unavailable), an internal failure or a call already ended (Canceled,
// DeadlineExceeded) reaches the client as ResourceExhausted too, which a
// retry policy reads as a denial. Use
// [UnaryServerInterceptor] and [StreamServerInterceptor] to keep the
// details.
func MiddlewareLimiter(svc *service.Service, opts ...Option) ratelimit.Limiter {
	return middlewareLimiter{newLimiter(svc, PeerIP(), opts)}
}

type middlewareLimiter struct{ l *limiter }

// Limit implements ratelimit.Limiter. A nil ctx, which names no call,
// fails as a panicking key function does (codes.Internal, nil under dry
// run; the observer hears of it), and sends no metadata.
func (m middlewareLimiter) Limit(ctx context.Context) error {
	if ctx == nil {
		v := m.l.failed("", fmt.Errorf("grpclimit: Limit with a nil Context: %w", hotlimit.ErrInvalidConfig))
		m.l.observe(&v)
		return v.err
	}
	method, _ := grpc.Method(ctx)
	v, exempt := m.l.admit(ctx, method, nil)
	if exempt {
		return nil
	}
	m.l.observe(&v)
	if v.err != nil {
		if md := m.l.trailer(&v); md != nil {
			_ = grpc.SetTrailer(ctx, md)
		}
		return v.err
	}
	if md := m.l.header(&v); md != nil {
		_ = grpc.SetHeader(ctx, md)
	}
	return nil
}
