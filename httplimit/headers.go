package httplimit

import (
	"net/http"
	"strconv"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
)

// Header keys in canonical form, so that Header.Get finds them; field names
// are case-insensitive on the wire.
const (
	keyPolicy        = "Ratelimit-Policy"
	keyRateLimit     = "Ratelimit"
	keyRetryAfter    = "Retry-After"
	keyLegacyLimit   = "X-Ratelimit-Limit"
	keyLegacyRemain  = "X-Ratelimit-Remaining"
	keyLegacyReset   = "X-Ratelimit-Reset"
	problemMediaType = "application/problem+json"
)

// PolicyName is the default policy name: the algorithm in lower case, the
// limit and the window, joined by '-', as in "fixedwindow-3-1s",
// "tokenbucket-100-1m" or "slidinglog-5-1h30m", followed by the burst when a
// token bucket or GCRA sets one other than the limit,
// "tokenbucket-5-1s-burst20". See the package doc for why names are derived
// from the Config.
func PolicyName(c hotlimit.Config) string { return transport.PolicyName(c) }

// setHeaders writes the RateLimit fields of d under p, the legacy fields when
// legacy is set, and Retry-After when deny is set and waiting helps. When
// decided is false (p's limiter could not decide, and d is its failure
// policy's), it writes p's RateLimit-Policy item and X-RateLimit-Limit
// alone, removing the X-RateLimit-Remaining and X-RateLimit-Reset an outer
// middleware may have set: the draft requires r in every RateLimit item, and the failure
// policy's Remaining and ResetAfter are no limiter's count.
//
// Every number goes into one string, built in a stack buffer: the RateLimit
// item "name";r=R;t=T followed by the Retry-After seconds. The legacy fields
// and Retry-After are substrings of it, and one array backs every header
// value, so the whole call allocates twice. Each value slice is capped at
// length 1, so a handler that appends to one never writes into another.
func setHeaders(h http.Header, p *transport.Policy, d hotlimit.Decision, decided, legacy, deny bool) {
	var buf [128]byte
	b := buf[:0]
	var rFrom, rTo, tFrom, tTo int
	if decided {
		b, rFrom, rTo, tFrom, tTo = p.AppendRateLimit(b, d)
	}
	retry := deny && d.RetryAfter != hotlimit.Never
	if retry {
		// Rounded up, so never earlier than the limiter's RetryAfter; at
		// least 1, since a denial that may retry at once would be a loop.
		b = strconv.AppendInt(b, max(transport.CeilSeconds(d.RetryAfter), 1), 10)
	}
	s := string(b)

	var vals []string
	if legacy {
		vals = make([]string, 6)
	} else {
		vals = make([]string, 3)
	}
	vals[0], vals[1], vals[2] = p.Field, s[:tTo], s[tTo:]
	if len(h) == 0 { // the usual case: nothing to append to, one map write each
		h[keyPolicy] = vals[0:1:1]
		if decided {
			h[keyRateLimit] = vals[1:2:2]
		}
	} else {
		appendValue(h, keyPolicy, vals[0:1:1])
		if decided {
			appendValue(h, keyRateLimit, vals[1:2:2])
		}
	}
	if retry {
		h[keyRetryAfter] = vals[2:3:3]
	}
	if legacy {
		vals[3] = p.Limit
		h[keyLegacyLimit] = vals[3:4:4]
		if decided {
			vals[4], vals[5] = s[rFrom:rTo], s[tFrom:tTo]
			h[keyLegacyRemain] = vals[4:5:5]
			h[keyLegacyReset] = vals[5:6:6]
		} else {
			// An outer middleware's count, left beside this limit's
			// X-RateLimit-Limit, would read as this limit's.
			delete(h, keyLegacyRemain)
			delete(h, keyLegacyReset)
		}
	}
}

// appendItems adds the RateLimit-Policy and RateLimit items of another
// limit of the rule, p, with its own decision d, after those setHeaders
// wrote for the deciding one; the RateLimit-Policy item alone when decided
// is false, as for setHeaders. It allocates the item's text and what the
// two lists need to grow: the values go into the lists as strings, never
// as slices of an array of their own, which would move to the heap.
func appendItems(h http.Header, p *transport.Policy, d hotlimit.Decision, decided bool) {
	appendValue(h, keyPolicy, p.Fields)
	if !decided {
		return
	}
	var buf [64]byte
	b, _, _, _, _ := p.AppendRateLimit(buf[:0], d)
	h[keyRateLimit] = append(h[keyRateLimit], string(b))
}

// appendValue adds v (one value) to the list field key: it becomes the field
// when the field is absent, and is appended to the field's values otherwise,
// so nested limiters each advertise their policy.
func appendValue(h http.Header, key string, v []string) {
	if old := h[key]; len(old) > 0 {
		h[key] = append(old, v[0])
		return
	}
	h[key] = v
}
