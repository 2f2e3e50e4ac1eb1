// Package jsonobj reads the members of a JSON object, as encoding/json does
// into a map, but refuses a name given twice, which encoding/json lets the
// last one win: in a policy, a rule or field given twice is a mistake to
// report, not one to resolve silently.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is the most bytes of a value that an error quotes: a longer
// one (a blob pasted into the wrong field) is cut there and its length
// given, so that an error stays a line whatever the input holds.
const MaxQuoted = 128

// Clip returns s, or, when it is longer than MaxQuoted bytes, its start (cut
// where a character starts) followed by "… (N bytes)".
func Clip(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	return s[:cut(s)] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Quote is strconv.Quote(s), for a value longer than MaxQuoted bytes
// of its start only, followed by "… (N bytes)" (see Clip).
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cut(s)]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// cut is where Clip and Quote cut s, which is longer than MaxQuoted: at
// MaxQuoted, or before a valid character that spans it, so that no
// character is split. Bytes that are no valid UTF-8 (continuation bytes
// with no start, which strconv.Quote escapes one by one) are cut at
// MaxQuoted like single-byte characters: backing off over them would quote
// nothing of a value made of them.
func cut(s string) int {
	for i := MaxQuoted; i > MaxQuoted-utf8.UTFMax && i > 0; i-- {
		if !utf8.RuneStart(s[i]) {
			continue
		}
		if i == MaxQuoted {
			return i
		}
		// An invalid sequence decodes as one byte, which ends before the
		// cut: only a valid character reaches across it.
		if _, size := utf8.DecodeRuneInString(s[i:]); i+size > MaxQuoted {
			return i
		}
		break
	}
	return MaxQuoted
}

// Members decodes data, which must be one JSON object, into its members'
// raw values. ok is false when data is not one JSON object (null included).
// dup is the first name given twice (case matters), and fields is then nil.
func Members(data []byte) (fields map[string]json.RawMessage, dup string, ok bool) {
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, "", false
	}
	// data is a valid object: walk its members again, by token, to find a
	// name that the map kept once.
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, "", false
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, name, true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, "", false
		}
	}
	return fields, "", true
}

// Object decodes data, which must be one JSON object, into its raw members,
// refusing a member whose name is not exactly one of names (case matters)
// and one given twice. Its errors say what is wrong and wrap invalid, the
// caller's sentinel; one for a member of a known name given twice is a
// [*RepeatedError], which names the member.
func Object(data []byte, invalid error, names ...string) (map[string]json.RawMessage, error) {
	fields, dup, ok := Members(data)
	switch {
	case !ok:
		return nil, fmt.Errorf("want a JSON object, got %s: %w", Kind(data), invalid)
	case dup != "" && slices.Contains(names, dup):
		return nil, &RepeatedError{Name: dup, invalid: invalid}
	case dup != "":
		return nil, unknown(dup, names, invalid)
	}
	for name := range fields {
		if !slices.Contains(names, name) {
			return nil, unknown(name, names, invalid)
		}
	}
	return fields, nil
}

func unknown(name string, names []string, invalid error) error {
	return fmt.Errorf("unknown field %s, want one of %s: %w", Quote(name), strings.Join(names, ", "), invalid)
}

// A RepeatedError is Object's error for a member of a known name given
// twice.
type RepeatedError struct {
	Name    string // the member's name
	invalid error
}

// Error says which member is given twice.
func (e *RepeatedError) Error() string {
	return fmt.Sprintf("field %s given twice: %v", Quote(e.Name), e.invalid)
}

// Unwrap returns the sentinel given to Object.
func (e *RepeatedError) Unwrap() error { return e.invalid }

// Kind names the kind of the JSON value in data, for an error message: "a
// string", "an array", "an object" (or "an invalid object" when data starts
// as one but is not valid JSON), and so on; "nothing" when data is empty.
func Kind(data []byte) string {
	s := strings.TrimSpace(string(data))
	switch {
	case s == "":
		return "nothing"
	case s == "null":
		return "null"
	case s[0] == '[':
		return "an array"
	case s[0] == '"':
		return "a string"
	case s[0] == '{' && json.Valid(data):
		return "an object"
	case s[0] == '{':
		return "an invalid object"
	case s == "true" || s == "false":
		return "a boolean"
	}
	return "a number"
}
