package hotlimit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hotlimit/hotlimit/internal/durations"
	"github.com/hotlimit/hotlimit/internal/jsonobj"
)

// ErrInvalidConfig is wrapped by every error that rejects a policy: a bad
// [Config] field, or a limit or window outside the range an algorithm can
// represent. Test for it with errors.Is.
var ErrInvalidConfig = errors.New("invalid config")

// Algorithm names a rate-limiting algorithm. The zero value names none and is
// rejected by [Config.Validate].
type Algorithm uint8

// The algorithms, each implemented by the package of the same name.
const (
	// TokenBucket holds up to Limit tokens, refilled continuously at Limit per
	// Window; a request takes one. Bursts of up to Limit, smooth afterwards.
	TokenBucket Algorithm = 1
	// FixedWindow admits Limit requests per window aligned on the clock's origin.
	// Up to 2×Limit can pass across a window boundary.
	FixedWindow Algorithm = 2
	// SlidingLog admits a request when fewer than Limit passed in the Window
	// before it: exact, at the cost of Limit timestamps per key.
	SlidingLog Algorithm = 3
	// GCRA is the generic cell rate algorithm: the token bucket's model kept
	// as one theoretical arrival time per key.
	GCRA Algorithm = 4
	// SlidingCounter weighs the previous fixed window's count by its overlap
	// with the sliding window: O(1) memory, approximate.
	SlidingCounter Algorithm = 5
	// Unlimited always passes and keeps no state: an allow-list entry for
	// given users, APIs or pairs, alone in its service rule. A user's entry
	// yields, as every user rule does, to the rules of APIs and pairs: the
	// user is still limited on an API that has a rule, unless a pair entry
	// exempts it there. It takes no Limit, Window or Burst, and reports Limit
	// and Remaining as math.MaxInt.
	Unlimited Algorithm = 6
)

var algorithmNames = map[Algorithm]string{
	TokenBucket:    "TokenBucket",
	FixedWindow:    "FixedWindow",
	SlidingLog:     "SlidingLog",
	GCRA:           "GCRA",
	SlidingCounter: "SlidingCounter",
	Unlimited:      "Unlimited",
}

// String returns the algorithm's Go name, such as "TokenBucket", or
// "Algorithm(n)" for a value that names none.
func (a Algorithm) String() string {
	if s, ok := algorithmNames[a]; ok {
		return s
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// Valid reports whether a names an algorithm.
func (a Algorithm) Valid() bool {
	_, ok := algorithmNames[a]
	return ok
}

// Config is an immutable policy: at most Limit requests per Window, enforced by
// Algorithm. Config is comparable, so equal policies can share one limiter.
// The zero Config names no algorithm and limits nothing: Validate rejects it,
// and so does every constructor that takes a Config; it never means
// "unlimited" (that is [Unlimited]).
type Config struct {
	// Algorithm is how requests are counted: TokenBucket, GCRA,
	// FixedWindow, SlidingCounter, SlidingLog, or Unlimited, which takes no
	// Limit, Window or Burst.
	Algorithm Algorithm
	// Limit is how many requests pass per Window: at least 1, and in
	// memory at most the algorithm's [Algorithm.Range] MaxLimit (other
	// backends, such as redislimit, have ranges of their own).
	Limit int
	// Window is the period Limit counts over: positive, and in memory
	// within the algorithm's [Algorithm.Range].
	Window time.Duration
	// Burst, for TokenBucket and GCRA only, is how many requests a key may
	// pass at once; the rate stays Limit per Window. 0 means Limit.
	Burst int
	// Shadow puts the limit in shadow mode: it decides and counts as usual,
	// and reports what it would have denied to the observer (see
	// [OutcomeShadowDenied]), but the caller always passes. It is how a new
	// limit is rolled out safely. The service applies it (and what decides
	// through one: httplimit, grpclimit, hotlimitd); a limiter built from a
	// Config on its own (a package's New, service.NewLimiter,
	// redislimit.New) decides as without it. The limits of a service's
	// rules that differ only in Shadow and Scope share one limiter (and so
	// do service.Service.TakeWith's), so a limit in shadow mode holds its
	// keys under the same key cap ([WithMaxKeys]) as the others: its keys
	// take room that their new keys, refused at the cap, then lack.
	Shadow bool
	// Scope says whose quota the limit counts in a service rule: the
	// (user, api) pair's (PerPair, the zero value), the user's, the api's or
	// everyone's. A limiter used on its own ignores it; service.NewLimiter
	// rejects any other scope than PerPair.
	Scope Scope
}

// HasBurst reports whether a lets Config.Burst differ from the limit.
func (a Algorithm) HasBurst() bool {
	return a == TokenBucket || a == GCRA
}

// Capacity returns the most requests a fresh key of c passes at once, the
// most an allowed Decision's Remaining can be (plus the one it took): Burst
// when the algorithm has one and it is set, else Limit. For [Unlimited],
// which counts nothing and has no Limit, it is 0 (its Limit), not the
// math.MaxInt its decisions report.
func (c Config) Capacity() int {
	if c.Burst > 0 && c.Algorithm.HasBurst() {
		return c.Burst
	}
	return c.Limit
}

// String formats c as "TokenBucket 5/1s", "TokenBucket 100/1m0s burst 10"
// when it has a burst, "Unlimited" for Unlimited, with " per user" (or api,
// global) appended for a scope other than PerPair and " shadow" in shadow
// mode.
func (c Config) String() string {
	var s string
	switch {
	case c.Algorithm == Unlimited:
		s = "Unlimited"
	case c.Burst != 0:
		s = fmt.Sprintf("%v %d/%v burst %d", c.Algorithm, c.Limit, c.Window, c.Burst)
	default:
		s = fmt.Sprintf("%v %d/%v", c.Algorithm, c.Limit, c.Window)
	}
	if c.Scope != PerPair {
		s += " per " + c.Scope.String()
	}
	if c.Shadow {
		s += " shadow"
	}
	return s
}

// Validate reports the first field of c that its algorithm does not accept,
// in an error that names the field and wraps [ErrInvalidConfig]: a field no
// algorithm accepts, or one outside the algorithm's [Range]. The algorithm's
// constructor accepts exactly the Configs Validate accepts, with one
// leniency: the constructor of an algorithm without a burst also takes
// [WithBurst] of its limit, which changes nothing, where Validate rejects any
// Burst for it.
func (c Config) Validate() error {
	if err := c.ValidateFields(); err != nil {
		return err
	}
	return c.Algorithm.Range().check(c)
}

// ValidateFields is [Config.Validate] without the algorithm's [Range]: it
// rejects only what no backend can enforce (no algorithm, a Limit below 1, a
// Window not positive, a negative Burst, a Burst for an algorithm without
// one). Backends whose state has other widths than the in-memory limiters',
// such as redislimit, check their own ranges after it.
func (c Config) ValidateFields() error {
	if !c.Scope.Valid() {
		return fmt.Errorf("hotlimit: Config.Scope %v is not a scope: %w", c.Scope, ErrInvalidConfig)
	}
	if c.Algorithm == Unlimited {
		return c.validateUnlimited()
	}
	switch {
	case c.Algorithm == 0: // the zero Config, or a literal that forgot it
		return fmt.Errorf("hotlimit: Config.Algorithm not set, want one of %s: %w", algorithmList(), ErrInvalidConfig)
	case !c.Algorithm.Valid():
		return fmt.Errorf("hotlimit: Config.Algorithm %v is not an algorithm, want one of %s: %w", c.Algorithm, algorithmList(), ErrInvalidConfig)
	case c.Limit < 1:
		return fmt.Errorf("hotlimit: Config.Limit %d must be at least 1: %w", c.Limit, ErrInvalidConfig)
	case c.Window <= 0:
		return fmt.Errorf("hotlimit: Config.Window %v must be positive: %w", c.Window, ErrInvalidConfig)
	case c.Burst < 0:
		return fmt.Errorf("hotlimit: Config.Burst %d must not be negative: %w", c.Burst, ErrInvalidConfig)
	case c.Burst > 0 && !c.Algorithm.HasBurst():
		return fmt.Errorf("hotlimit: Config.Burst %d: %v has no burst, only TokenBucket and GCRA do: %w", c.Burst, c.Algorithm, ErrInvalidConfig)
	}
	return nil
}

// validateUnlimited rejects the fields that Unlimited does not take.
func (c Config) validateUnlimited() error {
	switch {
	case c.Limit != 0:
		return fmt.Errorf("hotlimit: Config.Limit %d: Unlimited takes no limit: %w", c.Limit, ErrInvalidConfig)
	case c.Window != 0:
		return fmt.Errorf("hotlimit: Config.Window %v: Unlimited takes no window: %w", c.Window, ErrInvalidConfig)
	case c.Burst != 0:
		return fmt.Errorf("hotlimit: Config.Burst %d: Unlimited takes no burst: %w", c.Burst, ErrInvalidConfig)
	}
	return nil
}

// algorithmOrder lists the algorithms in the order error messages name them.
var algorithmOrder = []Algorithm{TokenBucket, FixedWindow, SlidingLog, GCRA, SlidingCounter, Unlimited}

// MarshalText returns the algorithm's name as [Algorithm.String] spells it,
// such as "TokenBucket". A value that names no algorithm is an error wrapping
// [ErrInvalidConfig], since no text would read back as it.
func (a Algorithm) MarshalText() ([]byte, error) {
	if !a.Valid() {
		return nil, fmt.Errorf("hotlimit: %v is not an algorithm: %w", a, ErrInvalidConfig)
	}
	return []byte(a.String()), nil
}

// UnmarshalText sets a to the algorithm named by text. Case, underscores and
// hyphens are ignored, so "TokenBucket", "tokenbucket", "token_bucket" and
// "TOKEN-BUCKET" all name [TokenBucket]. An unknown name is an error that
// quotes it (its first 128 bytes and its length, when longer), lists the
// valid names and wraps [ErrInvalidConfig]; a is then unchanged.
func (a *Algorithm) UnmarshalText(text []byte) error {
	alg, err := parseAlgorithm(string(text))
	if err != nil {
		return fmt.Errorf("hotlimit: %w", err)
	}
	*a = alg
	return nil
}

// parseAlgorithm reads an algorithm name; see [Algorithm.UnmarshalText].
func parseAlgorithm(s string) (Algorithm, error) {
	norm := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	for _, a := range algorithmOrder {
		if strings.ToLower(a.String()) == norm {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %s, want one of %s: %w", jsonobj.Quote(s), algorithmList(), ErrInvalidConfig)
}

// algorithmList names every algorithm, for an error that rejects another.
func algorithmList() string {
	names := make([]string, len(algorithmOrder))
	for i, a := range algorithmOrder {
		names[i] = a.String()
	}
	return strings.Join(names, ", ")
}

// FieldError reports a field of a JSON policy that could not be read. Field
// is the field's JSON name, such as "window"; Err says why and wraps
// [ErrInvalidConfig]. Readers of larger documents use Field to name the
// offending entry in full. A FieldError made with a nil Err, such as the
// zero one, reads as one whose Err is ErrInvalidConfig.
type FieldError struct {
	Field string
	Err   error
}

// Error returns "hotlimit: Config field <field>: <why>".
func (e *FieldError) Error() string {
	return "hotlimit: Config field " + e.Field + ": " + e.Unwrap().Error()
}

// Unwrap returns e.Err, or ErrInvalidConfig when e.Err is nil.
func (e *FieldError) Unwrap() error {
	if e.Err == nil {
		return ErrInvalidConfig
	}
	return e.Err
}

// configJSON is the JSON shape of a Config on output.
type configJSON struct {
	Algorithm Algorithm `json:"algorithm"`
	Limit     int       `json:"limit"`
	Window    string    `json:"window"`
	Burst     int       `json:"burst,omitempty"`
	Shadow    bool      `json:"shadow,omitempty"`
	Scope     *Scope    `json:"scope,omitempty"`
}

// unlimitedJSON is the JSON shape of an Unlimited Config on output.
type unlimitedJSON struct {
	Algorithm Algorithm `json:"algorithm"`
	Shadow    bool      `json:"shadow,omitempty"`
	Scope     *Scope    `json:"scope,omitempty"`
}

// MarshalJSON encodes c as
//
//	{"algorithm":"TokenBucket","limit":5,"window":"1s","burst":10}
//
// with the window as a Go duration string ([time.Duration.String]), burst
// omitted when 0, "shadow":true only in shadow mode and "scope" ("user",
// "api" or "global") only for a scope other than PerPair, so that a Config
// without one writes what it wrote before scopes existed; an Unlimited Config
// of no limit, window or burst writes none of them, {"algorithm":"Unlimited"}
// (with its shadow and scope as above). It fails only when c.Algorithm names no
// algorithm or c.Scope no scope. [Config.UnmarshalJSON] reads the output
// back to an equal Config.
func (c Config) MarshalJSON() ([]byte, error) {
	var scope *Scope
	if c.Scope != PerPair {
		scope = &c.Scope
	}
	if c.Algorithm == Unlimited && c.Limit == 0 && c.Window == 0 && c.Burst == 0 {
		return json.Marshal(unlimitedJSON{Algorithm: c.Algorithm, Shadow: c.Shadow, Scope: scope})
	}
	return json.Marshal(configJSON{Algorithm: c.Algorithm, Limit: c.Limit, Window: c.Window.String(), Burst: c.Burst, Shadow: c.Shadow, Scope: scope})
}

// UnmarshalJSON decodes the object [Config.MarshalJSON] writes, strictly:
// "algorithm", "limit" and "window" are required ("limit" and "window" are
// optional for Unlimited), "burst", "shadow" and "scope" are optional (a
// missing scope is PerPair; [Scope.UnmarshalText] reads it), any other
// field (including a differently cased one) and a field given twice are
// rejected, the algorithm is read by [Algorithm.UnmarshalText] and the
// window by [time.ParseDuration].
// Errors are [*FieldError] values naming the field, or name the object when it
// is not one; all wrap [ErrInvalidConfig]. Of an Unlimited policy, a limit,
// window or burst that cannot be read is an error saying that Unlimited
// takes none, not how to write one. On error c is unchanged. It does
// not call [Config.Validate]: a limit of 0 reads back as 0.
func (c *Config) UnmarshalJSON(data []byte) error {
	fields, err := decodeObject(data, "algorithm", "limit", "window", "burst", "shadow", "scope")
	var fe *FieldError
	if errors.As(err, &fe) {
		return err
	} else if err != nil {
		return fmt.Errorf("hotlimit: Config: %w", err)
	}
	var next Config
	var window string
	for _, f := range []struct {
		name     string
		dst      any
		optional bool
	}{
		{"algorithm", &next.Algorithm, false},
		{"limit", &next.Limit, false},
		{"window", &window, false},
		{"burst", &next.Burst, true},
		{"shadow", &next.Shadow, true},
		{"scope", &next.Scope, true},
	} {
		raw, ok := fields[f.name]
		if !ok || string(raw) == "null" {
			if f.optional || next.Algorithm == Unlimited && (f.name == "limit" || f.name == "window") {
				continue
			}
			return &FieldError{Field: f.name, Err: fmt.Errorf("missing: %w", ErrInvalidConfig)}
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			if next.Algorithm == Unlimited && (f.name == "limit" || f.name == "window" || f.name == "burst") {
				return unlimitedTakesNo(f.name, raw)
			}
			if errors.Is(err, ErrInvalidConfig) {
				err = errors.Unwrap(err) // the algorithm's own message, without the package prefix
			} else if f.name == "window" {
				// A number here is most often seconds or milliseconds:
				// say what a window is written as.
				err = fmt.Errorf("%s, %s: %w", unjson(err), durationForms, ErrInvalidConfig)
			} else {
				err = fmt.Errorf("%s: %w", unjson(err), ErrInvalidConfig)
			}
			return &FieldError{Field: f.name, Err: err}
		}
	}
	if window != "" || next.Algorithm != Unlimited {
		w, err := time.ParseDuration(window)
		if err != nil && next.Algorithm == Unlimited {
			return unlimitedTakesNo("window", fields["window"])
		}
		if err != nil {
			// time's message, without the package name a writer of JSON
			// cannot act on, and what a window is written as.
			msg := strings.TrimPrefix(err.Error(), "time: ")
			if durations.Overflows(window) {
				msg = fmt.Sprintf("%s is %s (about 292 years)", jsonobj.Quote(window), durations.Beyond(window))
			} else if len(window) > jsonobj.MaxQuoted {
				// time's message would quote all of it
				msg = "invalid duration " + jsonobj.Quote(window) + ", want " + durationForms
			} else if hint := durationHint(window); hint != "" {
				msg += " (" + hint + ")"
			} else {
				msg += ", want " + durationForms
			}
			return &FieldError{Field: "window", Err: fmt.Errorf("%s: %w", msg, ErrInvalidConfig)}
		}
		next.Window = w
	}
	*c = next
	return nil
}

// unlimitedTakesNo is the error of an Unlimited policy's field (limit,
// window or burst) given as raw, which cannot be read: how to write one
// would not help, as Unlimited takes none (see [Config.Validate]). raw is
// quoted as the other errors quote a value: its first 128 bytes and its
// length, when longer.
func unlimitedTakesNo(field string, raw json.RawMessage) error {
	return &FieldError{Field: field, Err: fmt.Errorf("got %s, but Unlimited takes no %s: %w", jsonobj.Clip(string(raw)), field, ErrInvalidConfig)}
}

// durationHint says how to write a window that time.ParseDuration rejects
// for a unit it does not have, days or weeks ("1d", "2w"); otherwise "".
func durationHint(window string) string {
	switch {
	case strings.HasSuffix(window, "d"):
		return "a window has no unit of days: write 24h for a day"
	case strings.HasSuffix(window, "w"):
		return "a window has no unit of weeks: write 168h for a week"
	}
	return ""
}

// durationForms says how a window is written, in the errors of one that
// cannot be read.
const durationForms = `a Go duration such as "1s", "1m" or "24h"`

// unjson shortens encoding/json's type errors, which name Go types, to what a
// writer of JSON needs.
func unjson(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := "an integer"
		switch {
		case te.Type.String() == "string" || strings.HasSuffix(te.Type.String(), "Algorithm") || strings.HasSuffix(te.Type.String(), "Scope"):
			want = "a string"
		case te.Type.String() == "bool":
			want = "true or false"
		}
		return "got JSON " + jsonobj.Clip(te.Value) + ", want " + want
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// decodeObject decodes data, which must be one JSON object, into its raw
// members, rejecting a member whose name is not exactly one of names (case
// matters), and one given twice, as a [*FieldError]. The errors wrap
// [ErrInvalidConfig].
func decodeObject(data []byte, names ...string) (map[string]json.RawMessage, error) {
	fields, err := jsonobj.Object(data, ErrInvalidConfig, names...)
	var rep *jsonobj.RepeatedError
	if errors.As(err, &rep) {
		return nil, &FieldError{Field: rep.Name, Err: fmt.Errorf("given twice: %w", ErrInvalidConfig)}
	}
	return fields, err
}
