package grpclimit

import (
	"math"
	"strconv"
	"time"
	"unsafe"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
)

// Metadata keys the interceptors send. gRPC metadata keys are lower case.
const (
	// MetadataPolicy carries the RateLimit-Policy item of the deciding
	// policy, as httplimit's RateLimit-Policy field: "name";q=3;w=1; then,
	// for a rule of several limits, one value for each other limit.
	MetadataPolicy = "ratelimit-policy"
	// MetadataRateLimit carries the RateLimit item of each policy that
	// MetadataPolicy lists, in its order, with its own remaining count and
	// reset, as httplimit's RateLimit field: "name";r=2;t=1. A policy whose
	// limiter could not decide has no item here (see the package doc).
	MetadataRateLimit = "ratelimit"
	// MetadataPushback is gRFC A6's trailer: milliseconds the client's retry
	// policy waits before its next attempt, instead of its own backoff; a
	// negative value tells it not to retry.
	MetadataPushback = "grpc-retry-pushback-ms"
)

// rateLimitMD returns the RateLimit metadata of d under p in three
// allocations: the map (two: its header and its one group) and one
// rateLimitValue, which holds both the RateLimit item's text and the slice
// element that refers to it. The policy's value is p.Fields, shared by every
// call: grpc-go copies metadata it is given (metadata.Join), and nobody
// writes into a metadata value slice. When decided is false (p's limiter
// could not decide, and d is its failure policy's), it holds p's
// ratelimit-policy item alone, in the map's two allocations: the draft
// requires r in every RateLimit item, and the failure policy's Remaining
// and ResetAfter are no limiter's count.
func rateLimitMD(p *transport.Policy, d hotlimit.Decision, decided bool) metadata.MD {
	if !decided {
		return metadata.MD{MetadataPolicy: p.Fields}
	}
	v := new(rateLimitValue)
	b, _, _, _, _ := p.AppendRateLimit(v.text[:0], d)
	if len(b) > 0 && &b[0] == &v.text[0] {
		// b is v.text, which nothing writes again: the string may alias it,
		// as strings.Builder's does its buffer.
		v.value[0] = unsafe.String(&v.text[0], len(b))
	} else {
		v.value[0] = string(b) // a name too long for v.text
	}
	return metadata.MD{MetadataPolicy: p.Fields, MetadataRateLimit: v.value[:]}
}

// appendItems appends to md the RateLimit metadata of another limit of the
// rule, p, with its own decision d, after the deciding one's; its
// ratelimit-policy item alone when decided is false, as for rateLimitMD.
// The values are copied first: the policy's value is p.Fields of another
// policy, which every call shares.
func appendItems(md metadata.MD, p *transport.Policy, d hotlimit.Decision, decided bool) {
	pol := md[MetadataPolicy]
	md[MetadataPolicy] = append(pol[:len(pol):len(pol)], p.Fields...)
	if !decided {
		return
	}
	var buf [112]byte
	b, _, _, _, _ := p.AppendRateLimit(buf[:0], d)
	lim := md[MetadataRateLimit]
	md[MetadataRateLimit] = append(lim[:len(lim):len(lim)], string(b))
}

// rateLimitValue is the per-call part of the RateLimit metadata.
type rateLimitValue struct {
	value [1]string
	text  [112]byte // fits "name";r=R;t=T for names up to about 70 bytes
}

// RetryDelay is the wait a denial tells the client: d.RetryAfter rounded up
// to a whole millisecond (the unit of the pushback trailer), and at least
// 1 ms, since a denial that a wait can fix must never say "retry now". A
// wait within a millisecond of the largest Duration, which has no whole
// millisecond above it, is clamped to the largest whole millisecond, about
// 292 years. ok is false when no wait helps (RetryAfter is hotlimit.Never).
func RetryDelay(d hotlimit.Decision) (delay time.Duration, ok bool) {
	if d.RetryAfter == hotlimit.Never {
		return 0, false
	}
	ms := d.RetryAfter / time.Millisecond // no overflow, unlike adding 999999 ns first
	if d.RetryAfter%time.Millisecond > 0 && ms < msInMaxDuration {
		ms++
	}
	return max(ms, 1) * time.Millisecond, true
}

// msInMaxDuration is the number of whole milliseconds in the largest Duration.
const msInMaxDuration = time.Duration(math.MaxInt64) / time.Millisecond

// pushback returns the pushback trailer's value for a denial: the retry
// delay in milliseconds, or -1 (do not retry) when no wait helps.
func pushback(d hotlimit.Decision) string {
	delay, ok := RetryDelay(d)
	if !ok {
		return "-1"
	}
	return strconv.FormatInt(delay.Milliseconds(), 10)
}

// unavailableDenial returns the status of a call denied by the failure
// policy of a limiter that could not decide: codes.Unavailable, with the
// message of errUnavailable and, when a wait helps, a google.rpc.RetryInfo
// of the policy's wait, the pushback's, so that a client that reads the
// details waits as one that reads the trailer does.
func unavailableDenial(d hotlimit.Decision) error {
	delay, ok := RetryDelay(d)
	if !ok {
		return errUnavailable
	}
	st, err := status.New(codes.Unavailable, unavailable).WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		return errUnavailable
	}
	return st.Err()
}

// denial returns the status of a denied call: codes.ResourceExhausted, a
// message that names the policy and the wait, a google.rpc.RetryInfo with
// the wait (absent when no wait helps) and a google.rpc.QuotaFailure whose
// violation's subject is the kind of the user key ("ip",
// "header:x-api-key"), or "api" or "global" for a policy of that scope,
// description the policy, quota_id the policy name and quota_value its q
// (the burst when one is set, else the limit).
func denial(user string, p *transport.Policy, d hotlimit.Decision) error {
	desc := "policy " + strconv.Quote(p.Name) + " (" + transport.RateText(p.Config) + ")"
	msg := "rate limit of " + desc + " exceeded; "
	delay, ok := RetryDelay(d)
	if ok {
		msg += "retry in " + delay.String()
	} else {
		msg += "this call can never pass under it"
	}
	subject := transport.Kind(user)
	switch {
	case p.Config.Scope == hotlimit.PerAPI:
		subject = "api" // every caller of the method shares the quota
	case p.Config.Scope == hotlimit.Global:
		subject = "global" // every caller shares the quota
	case user == "":
		subject = "none" // a keyless call: the shared quota of every keyless call
	case subject == "":
		subject = "user" // an untagged key of the application's own
	}
	st := status.New(codes.ResourceExhausted, msg)
	details := []protoadapt.MessageV1{&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     subject,
		Description: desc,
		QuotaId:     p.Name,
		QuotaValue:  int64(p.Config.Capacity()), // q of the ratelimit-policy item
	}}}}
	if ok {
		details = append([]protoadapt.MessageV1{&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)}}, details...)
	}
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	}
	return st.Err()
}
