package transport

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

type ptrName struct{ s string }

func (p *ptrName) String() string { return p.s }

type mapName map[string]string

func (m mapName) String() string { return m["name"] }

type intName int

func (i intName) String() string { return strconv.Itoa(int(i)) }

func TestContextString(t *testing.T) {
	for i, tc := range []struct {
		v  any
		s  string
		ok bool
	}{
		{"alice", "alice", true},
		{"", "", false},
		{nil, "", false},
		{42, "", false},
		{&ptrName{"bob"}, "bob", true},
		{&ptrName{}, "", false},
		{(*ptrName)(nil), "", false},
		{mapName{"name": "carol"}, "carol", true},
		{mapName(nil), "", false},
		{intName(7), "7", true},
	} {
		var s string
		var ok bool
		assert.NotPanics(t, func() { s, ok = ContextString(tc.v) }, "case %d", i)
		assert.Equal(t, tc.s, s, "case %d", i)
		assert.Equal(t, tc.ok, ok, "case %d", i)
	}
}
