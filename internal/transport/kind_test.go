package transport

import (
	randv1 "math/rand"
	randv2 "math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

type ptrName struct{ s string }

func (p *ptrName) String() string { return p.s }

type mapName map[string]string

func (m mapName) String() string { return m["name"] }

// sliceName names the first of its names; a nil one, as an anonymous
// caller's, has none, and its String panics as an empty one's would.
type sliceName []string

func (s sliceName) String() string { return s[0] }

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
		{sliceName{"dave"}, "dave", true},
		{sliceName(nil), "", false},
		{intName(7), "7", true},
	} {
		var s string
		var ok bool
		assert.NotPanics(t, func() { s, ok = ContextString(tc.v) }, "case %d", i)
		assert.Equal(t, tc.s, s, "case %d", i)
		assert.Equal(t, tc.ok, ok, "case %d", i)
	}
}

func TestHeaderKeys(t *testing.T) {
	k := NewHeaderKeys("X-API-Key")
	assert.Equal(t, "header:x-api-key:k-1", k.Key("k-1"))
	at := strings.Repeat("v", MaxHeaderValue)
	assert.Equal(t, "header:x-api-key:"+at, k.Key(at))
	long := k.Key(at + "v")
	assert.True(t, strings.HasPrefix(long, "header-sha256:x-api-key:"), long)
	assert.Len(t, long, len("header-sha256:x-api-key:")+64)
	assert.NotEqual(t, long, k.Key(at+"w"))
	assert.Equal(t, "header-sha256:x-api-key", Kind(long))
	authority := NewHeaderKeys(":authority")
	assert.Equal(t, "header::authority", Kind(authority.Key("api.example.com:443")), "a pseudo-header's colon is its name's")
	assert.Equal(t, "header-sha256::authority", Kind(authority.Key(at+"v")))
}

// TestHeaderValue: a key is made of the field value, trimmed of RFC 9110's
// whitespace (OWS: spaces and tabs) and of nothing else, and for Host and
// :authority folded to lower case, ASCII letters only; a value that needs
// no change costs no allocation.
func TestHeaderValue(t *testing.T) {
	key, host, authority := NewHeaderKeys("X-API-Key"), NewHeaderKeys("Host"), NewHeaderKeys(":authority")
	for _, v := range []string{"k1\r", "k1\n", "\vk1", "k1\f", "\u00a0k1", "k1\u3000", "\u0085k1"} {
		assert.Equal(t, v, key.Value(v), "%q is no OWS", v)
	}
	assert.Equal(t, "k 1", key.Value(" \t k 1\t "))
	assert.Equal(t, "", key.Value(" \t "))
	assert.Equal(t, "K1", key.Value("K1"), "only a host's case is folded")
	assert.Equal(t, "api.example.com:8443", host.Value(" API.Example.COM:8443\t"))
	assert.Equal(t, "api.example.com", authority.Value("Api.Example.com"))
	assert.Equal(t, "\u212a.example", host.Value("\u212a.EXAMPLE"), "the Kelvin sign is no K")
	assert.Equal(t, "zulu.example", host.Value("Zulu.example"), "Z, the last letter, is one")
	assert.Equal(t, "az.example", host.Value("AZ.example"), "so after the first")
	assert.Equal(t, "@[`{.example", host.Value("@[`{.example"), "the bytes around A-Z are no letters")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_ = key.Value("k-123")
		_ = host.Value("api.example.com")
	}))
}

type ctxKey int

// TestContextKindIsUnchanged pins the prefix of context keys byte for byte,
// since rules name users by them: %T's text, colons made '_', and the kind
// shared by the constants of one type and by same-named types of
// same-named packages (*rand.Rand of math/rand and of math/rand/v2), as
// httplimit's and grpclimit's ContextValue docs say.
func TestContextKindIsUnchanged(t *testing.T) {
	for _, tc := range []struct {
		key  any
		want string
	}{
		{ctxKey(0), "context:transport.ctxKey:"},
		{ctxKey(1), "context:transport.ctxKey:"},
		{&ptrName{}, "context:*transport.ptrName:"},
		{(*randv1.Rand)(nil), "context:*rand.Rand:"},
		{(*randv2.Rand)(nil), "context:*rand.Rand:"},
		{"k", "context:string:"},
		{nil, "context:<nil>:"},
		{struct {
			A int `json:"a"`
		}{}, `context:struct { A int "json_\"a\"" }:`},
	} {
		assert.Equal(t, tc.want, ContextKind(tc.key), "%#v", tc.key)
	}
}
