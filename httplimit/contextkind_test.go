package httplimit_test

import (
	"context"
	randv1 "math/rand"
	randv2 "math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/httplimit"
)

type roleKey int

const (
	userRole roleKey = iota
	tenantRole
)

// TestContextValueKindsThatShareANameAreSeparatedByTag: ContextValue's
// kind is the Go type of its key as %T writes it, with the package's name,
// not its path, and without the key's value. Two keys of types of one name
// in two packages of one name (*rand.Rand of math/rand and of
// math/rand/v2 here; auth.userKey of two packages named auth), or two keys
// of one type (userRole and tenantRole), are thus one kind, as the package
// doc says: the same value read under either is one key. Tag gives each
// source a kind of its own.
func TestContextValueKindsThatShareANameAreSeparatedByTag(t *testing.T) {
	for _, keys := range [][2]any{
		{(*randv1.Rand)(nil), (*randv2.Rand)(nil)},
		{userRole, tenantRole},
	} {
		a, b := keys[0], keys[1]
		ra := get("/", "192.0.2.1:1").WithContext(context.WithValue(context.Background(), a, "alice"))
		rb := get("/", "192.0.2.2:1").WithContext(context.WithValue(context.Background(), b, "alice"))
		ka, okA := httplimit.ContextValue(a)(ra)
		kb, okB := httplimit.ContextValue(b)(rb)
		assert.True(t, okA && okB)
		assert.Equal(t, ka, kb, "%T and %T: one kind", a, b)
		_, cross := httplimit.ContextValue(a)(rb)
		assert.False(t, cross, "each reads its own key")

		ka, _ = httplimit.Tag("sso", httplimit.ContextValue(a))(ra)
		kb, _ = httplimit.Tag("api", httplimit.ContextValue(b))(rb)
		assert.NotEqual(t, ka, kb, "%T and %T under Tag: a kind each", a, b)
	}
}
