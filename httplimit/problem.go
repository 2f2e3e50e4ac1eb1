package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
)

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// DenyProblem is the default [DenyFunc]: 429 Too Many Requests with an RFC
// 9457 application/problem+json body of type "about:blank", whose detail
// names the policy and says when to retry:
//
//	{"type":"about:blank","title":"Too Many Requests","status":429,
//	 "detail":"Rate limit of policy \"fixedwindow-3-1s\" (3 requests per 1s) exceeded; retry in 1 s."}
//
// A token bucket or GCRA with a burst other than its limit says so, as in
// "(5 requests per 1s, bursts of 20)", the q of its RateLimit-Policy item,
// and a policy of another scope than the pair's says whose quota it is:
// "(100 requests per 1m, shared by every user)" (see hotlimit.Scope).
// The response is marked Cache-Control: no-store.
//
// A denial by the failure policy of a limiter that could not decide
// (Event.Unavailable is set: Redis unreachable, say) is no quota spent: it
// gets 503 Service Unavailable instead, with the detail "The rate limiter
// is unavailable; the request was not served." (the error itself stays on
// the server, for the observer to log) and the Retry-After the policy
// chose. A denial by a limit that decided is 429 even when another limit of
// its rule failed (Event.Err set, Unavailable not): its quota is spent,
// even when the request's context ends between the decision and the
// answer. A request that ended before it was decided (Event.Ended: Err is
// its context's error) also gets 503, with the detail "The request ended
// before it was served." and no Retry-After, for whoever is still reading.
func DenyProblem(w http.ResponseWriter, r *http.Request, e Event) {
	if e.Ended {
		writeProblem(w, http.StatusServiceUnavailable, "The request ended before it was served.")
		return
	}
	if e.Unavailable {
		writeProblem(w, http.StatusServiceUnavailable, "The rate limiter is unavailable; the request was not served.")
		return
	}
	detail := "Rate limit of policy " + strconv.Quote(e.Policy) + " (" + transport.RateText(e.Config) + ") exceeded; "
	if e.Decision.RetryAfter == hotlimit.Never {
		detail += "this request can never pass under it."
	} else {
		detail += "retry in " + strconv.FormatInt(max(transport.CeilSeconds(e.Decision.RetryAfter), 1), 10) + " s."
	}
	writeProblem(w, http.StatusTooManyRequests, detail)
}

// writeProblem answers with an RFC 9457 problem of type "about:blank".
func writeProblem(w http.ResponseWriter, status int, detail string) {
	body, err := json.Marshal(problem{
		Type:   "about:blank",
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
	})
	if err != nil { // unreachable: the struct holds only strings and an int
		body = nil
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", problemMediaType)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
