package jsonobj_test

import (
	"encoding/json"
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
