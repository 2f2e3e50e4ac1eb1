package grpclimit_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// subjectKey is the context key of TestQuotaFailureSubjectIsTheKeysKind.
type subjectKey struct{}

// TestQuotaFailureSubjectIsTheKeysKind: a denial's QuotaFailure names the
// kind of the user key, never the key, as the package doc lists them: "ip",
// "header:x-api-key" (its digest's kind for a long value), "context:" and
// the key's type, a FromRequest kind, "none" for a keyless call and "user"
// for a key of the application's own without a colon (one with a colon
// reads as tagged, as KeyFunc warns, unless Tag gives it its kind).
func TestQuotaFailureSubjectIsTheKeysKind(t *testing.T) {
	md := metadata.Pairs("x-api-key", "k-1", "x-long", strings.Repeat("v", 300))
	ctx := metadata.NewIncomingContext(context.Background(), md)
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}})
	ctx = context.WithValue(ctx, subjectKey{}, "alice")
	own := func(context.Context, string, any) (string, bool) { return "alice", true }
	ownColon := func(context.Context, string, any) (string, bool) { return "alice@x:premium", true }
	ownHeader := func(context.Context, string, any) (string, bool) { return "header:alice:premium", true }
	tenant := grpclimit.FromRequest("tenant", func(any) (string, bool) { return "acme", true })
	for _, tc := range []struct {
		name string
		user grpclimit.KeyFunc
		want string
	}{
		{"PeerIP", grpclimit.PeerIP(), "ip"},
		{"Metadata", grpclimit.Metadata("x-api-key"), "header:x-api-key"},
		{"Metadata of a long value", grpclimit.Metadata("x-long"), "header-sha256:x-long"},
		{"ContextValue", grpclimit.ContextValue(subjectKey{}), "context:grpclimit_test.subjectKey"},
		{"FromRequest", tenant, "tenant"},
		{"no key", grpclimit.Metadata("x-absent"), "none"},
		{"a key of the application's own", own, "user"},
		{"a key of the application's own with a colon", ownColon, "alice@x"},
		{"a key of the application's own that starts as a header's", ownHeader, "header:alice"},
		{"the same key tagged", grpclimit.Tag("account", ownColon), "account"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, deniedSubject(t, ctx, cfg(hotlimit.FixedWindow, 1, time.Minute), tc.user))
		})
	}
}

// TestQuotaFailureSubjectIsTheQuotasScope: a denial by a policy whose quota
// is shared, per API or global, names that scope as its subject, not the
// kind of the caller's key: another identity would not get past it. A
// policy per user names the key's kind, as one per pair does.
func TestQuotaFailureSubjectIsTheQuotasScope(t *testing.T) {
	md := metadata.Pairs("x-api-key", "k-1")
	ctx := metadata.NewIncomingContext(context.Background(), md)
	for _, tc := range []struct {
		scope hotlimit.Scope
		want  string
	}{
		{hotlimit.PerPair, "header:x-api-key"},
		{hotlimit.PerUser, "header:x-api-key"},
		{hotlimit.PerAPI, "api"},
		{hotlimit.Global, "global"},
	} {
		t.Run(tc.scope.String(), func(t *testing.T) {
			c := cfg(hotlimit.FixedWindow, 1, time.Minute)
			c.Scope = tc.scope
			assert.Equal(t, tc.want, deniedSubject(t, ctx, c, grpclimit.Metadata("x-api-key")))
		})
	}
}

// deniedSubject returns the QuotaFailure subject of the second unary call
// in ctx to a server limited by c (whose first call passes), its user
// found by user.
func deniedSubject(t *testing.T, ctx context.Context, c hotlimit.Config, user grpclimit.KeyFunc) string {
	t.Helper()
	svc, _ := newService(t, c, 0)
	intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(user))
	info := &grpc.UnaryServerInfo{FullMethod: "/a.B/C"}
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	_, err := intercept(ctx, "req", info, handler)
	require.NoError(t, err)
	_, err = intercept(ctx, "req", info, handler)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	_, qf := details(t, err)
	require.Len(t, qf.GetViolations(), 1)
	return qf.GetViolations()[0].GetSubject()
}
