package hotlimit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hotlimit/hotlimit/internal/jsonobj"
)

// Scope says whose quota a limit of a service rule counts: each (user, api)
// pair's own, each user's across apis, each api's across users, or one quota
// for everyone. The quota belongs to the limit, not to the rule: equal limits
// (the same algorithm, limit, window and burst) of one scope count one quota
// in every rule that holds them, so a user's "100 per minute per user" in the
// default rule and in an api's rule is one quota of 100 across both, and two
// users' rules that each hold "1000 per day, global" share 1000 between them.
// Make the limits differ (a window of 61s, say) to keep the quotas apart. The
// zero value is [PerPair].
//
// Scope is read by service.Service only: a limiter used on its own counts
// whatever key it is given, and service.NewLimiter rejects any other scope
// than PerPair.
type Scope uint8

// The scopes, written in JSON as "pair", "user", "api" and "global".
const (
	// PerPair counts each (user, api) pair on its own: the default.
	PerPair Scope = iota
	// PerUser counts one quota per user, whichever api the request is to
	// (and whichever rule holds the limit).
	PerUser
	// PerAPI counts one quota per api, whichever user the request is from
	// (and whichever rule holds the limit).
	PerAPI
	// Global counts one quota shared by every request of every rule that
	// holds the limit: two rules of equal global limits share one quota.
	Global
)

var scopeNames = [...]string{PerPair: "pair", PerUser: "user", PerAPI: "api", Global: "global"}

// String returns the scope's JSON name: "pair", "user", "api" or "global",
// or "Scope(n)" for a value that names none.
func (s Scope) String() string {
	if s.Valid() {
		return scopeNames[s]
	}
	return "Scope(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s names a scope.
func (s Scope) Valid() bool { return int(s) < len(scopeNames) }

// MarshalText returns the scope's JSON name. A value that names no scope is an
// error wrapping [ErrInvalidConfig].
func (s Scope) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("hotlimit: %v is not a scope: %w", s, ErrInvalidConfig)
	}
	return []byte(scopeNames[s]), nil
}

// UnmarshalText sets s to the scope named by text: "pair", "user", "api" or
// "global", exactly. Anything else is an error that quotes it (its first
// 128 bytes and its length, when longer), lists the valid names and wraps
// [ErrInvalidConfig]; s is then unchanged.
func (s *Scope) UnmarshalText(text []byte) error {
	for i, name := range scopeNames {
		if string(text) == name {
			*s = Scope(i)
			return nil
		}
	}
	err := fmt.Errorf("unknown scope %s, want one of %s: %w", jsonobj.Quote(string(text)), strings.Join(scopeNames[:], ", "), ErrInvalidConfig)
	return fmt.Errorf("hotlimit: %w", err)
}
