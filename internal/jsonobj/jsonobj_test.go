package jsonobj_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/jsonobj"
)

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in     string
		fields map[string]json.RawMessage
		dup    string
		ok     bool
	}{
		{`{}`, map[string]json.RawMessage{}, "", true},
		{`{"a":1,"b":{"a":2,"a":3}}`, map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`{"a":2,"a":3}`)}, "", true},
		{`{"a":1,"A":2}`, map[string]json.RawMessage{"a": json.RawMessage(`1`), "A": json.RawMessage(`2`)}, "", true},
		{`{"a":1,"b":[1,2],"a":3}`, nil, "a", true},
		{`{"a":1,"\u0061":3}`, nil, "a", true},
		{`null`, nil, "", false},
		{`[]`, nil, "", false},
		{`{"a":}`, nil, "", false},
		{``, nil, "", false},
	} {
		fields, dup, ok := jsonobj.Members([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, "%s", tc.in)
		assert.Equal(t, tc.dup, dup, "%s", tc.in)
		assert.Equal(t, tc.fields, fields, "%s", tc.in)
	}
}

func TestObject(t *testing.T) {
	invalid := errors.New("invalid")
	for _, tc := range []struct {
		in       string
		fields   map[string]json.RawMessage
		err      string // "" when none
		repeated string // the name a *RepeatedError names
	}{
		{`{}`, map[string]json.RawMessage{}, "", ""},
		{`{"b":[1],"a":"x"}`, map[string]json.RawMessage{"a": json.RawMessage(`"x"`), "b": json.RawMessage(`[1]`)}, "", ""},
		{`{"a":1,"a":2}`, nil, `field "a" given twice: invalid`, "a"},
		{`{"a":1,"c":2,"c":3}`, nil, `unknown field "c", want one of a, b: invalid`, ""},
		{`{"a":1,"A":2}`, nil, `unknown field "A", want one of a, b: invalid`, ""},
		{`[{"a":1}]`, nil, `want a JSON object, got an array: invalid`, ""},
		{`{"a":}`, nil, `want a JSON object, got an invalid object: invalid`, ""},
		{`null`, nil, `want a JSON object, got null: invalid`, ""},
		{` `, nil, `want a JSON object, got nothing: invalid`, ""},
	} {
		fields, err := jsonobj.Object([]byte(tc.in), invalid, "a", "b")
		assert.Equal(t, tc.fields, fields, "%s", tc.in)
		if tc.err == "" {
			assert.NoError(t, err, "%s", tc.in)
			continue
		}
		assert.EqualError(t, err, tc.err, "%s", tc.in)
		assert.ErrorIs(t, err, invalid, "%s", tc.in)
		var rep *jsonobj.RepeatedError
		if assert.Equal(t, tc.repeated != "", errors.As(err, &rep), "%s", tc.in) && rep != nil {
			assert.Equal(t, tc.repeated, rep.Name, "%s", tc.in)
		}
	}
}

func TestKind(t *testing.T) {
	for in, want := range map[string]string{
		``: "nothing", "\t\n": "nothing", `null`: "null", ` [1, 2] `: "an array", `"s"`: "a string",
		`{"a":1}`: "an object", `{"a":1`: "an invalid object", `true`: "a boolean", `false`: "a boolean",
		`-1.5e3`: "a number",
	} {
		assert.Equal(t, want, jsonobj.Kind([]byte(in)), "%q", in)
	}
}

// TestQuoteClipsLongValues: a value of up to jsonobj.MaxQuoted bytes is quoted whole;
// a longer one is cut where a character starts, at most jsonobj.MaxQuoted bytes in,
// and its length given.
func TestQuoteClipsLongValues(t *testing.T) {
	edge := strings.Repeat("x", jsonobj.MaxQuoted)
	assert.Equal(t, strconv.Quote(edge), jsonobj.Quote(edge))
	assert.Equal(t, edge, jsonobj.Clip(edge))
	assert.Equal(t, strconv.Quote(edge)+"… (129 bytes)", jsonobj.Quote(edge+"y"))
	assert.Equal(t, edge+"… (129 bytes)", jsonobj.Clip(edge+"y"))
	// "é" is two bytes: 127 x and an é do not fit in 128, so the cut is before the é
	long := strings.Repeat("x", jsonobj.MaxQuoted-1) + "é" + "z"
	assert.Equal(t, strconv.Quote(strings.Repeat("x", jsonobj.MaxQuoted-1))+"… (130 bytes)", jsonobj.Quote(long))
	// A character of four bytes across the cut: the cut is before it.
	four := strings.Repeat("x", jsonobj.MaxQuoted-2) + "😀"
	assert.Equal(t, strings.Repeat("x", jsonobj.MaxQuoted-2)+"… (130 bytes)", jsonobj.Clip(four))
	// Invalid UTF-8 of continuation bytes alone starts no character: the
	// cut stays at MaxQuoted, showing the value's start.
	cont := strings.Repeat("\x80", 300)
	assert.Equal(t, cont[:jsonobj.MaxQuoted]+"… (300 bytes)", jsonobj.Clip(cont))
	assert.Equal(t, strconv.Quote(cont[:jsonobj.MaxQuoted])+"… (300 bytes)", jsonobj.Quote(cont))
}

// TestQuoteClipsInvalidUTF8AtTheBound: a long value of bytes that are no
// valid UTF-8 is still quoted for its first jsonobj.MaxQuoted bytes (each
// escaped), not cut back to nothing: only a valid character across the
// bound moves the cut, and never more than that character's start.
func TestQuoteClipsInvalidUTF8AtTheBound(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		kept    int // bytes quoted
	}{
		{"continuation bytes only", strings.Repeat("\x80", 200), jsonobj.MaxQuoted},
		{"0xff bytes", strings.Repeat("\xff", 130), jsonobj.MaxQuoted},
		{"a stray continuation at the bound", strings.Repeat("x", jsonobj.MaxQuoted-2) + "é" + "\x80\x80", jsonobj.MaxQuoted},
		{"a truncated character across the bound", strings.Repeat("x", jsonobj.MaxQuoted-2) + "\xf0\x9f\x98" + "z", jsonobj.MaxQuoted},
		{"a three-byte character across the bound", strings.Repeat("x", jsonobj.MaxQuoted-2) + "€" + "z", jsonobj.MaxQuoted - 2},
		{"a four-byte character across the bound", strings.Repeat("x", jsonobj.MaxQuoted-1) + "😀" + "z", jsonobj.MaxQuoted - 1},
		{"a four-byte character with one byte past the bound", strings.Repeat("x", jsonobj.MaxQuoted-3) + "😀" + "z", jsonobj.MaxQuoted - 3},
		{"a four-byte character ending at the bound", strings.Repeat("x", jsonobj.MaxQuoted-4) + "😀" + "z", jsonobj.MaxQuoted},
	} {
		tail := fmt.Sprintf("… (%d bytes)", len(tc.s))
		assert.Equal(t, strconv.Quote(tc.s[:tc.kept])+tail, jsonobj.Quote(tc.s), tc.name)
		assert.Equal(t, tc.s[:tc.kept]+tail, jsonobj.Clip(tc.s), tc.name)
	}
}
