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

// callUnary runs one unary call of unaryCall through the interceptor, from
// 192.0.2.1, and reports whether the handler ran.
func callUnary(ctx context.Context, i grpc.UnaryServerInterceptor) (served bool, err error) {
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}})
	_, err = i(ctx, struct{}{}, &grpc.UnaryServerInfo{FullMethod: unaryCall}, func(context.Context, any) (any, error) {
		served = true
		return nil, nil
	})
	return served, err
}

// TestDryRunDecidesAnEndedCall: under WithDryRun, a call whose context has
// already ended is decided and served as any other, as httplimit serves
// such a request: it takes its quota, reaches the handler and is reported
// without an error, since a dry run never changes what a caller gets.
func TestDryRunDecidesAnEndedCall(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Minute), 0)
	var rec recorder
	i := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithDryRun(true), grpclimit.WithObserver(rec.observe))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	served, err := callUnary(ended, i)
	assert.NoError(t, err)
	assert.True(t, served, "a dry run serves the ended call")
	e := rec.last()
	assert.True(t, e.DryRun)
	assert.True(t, e.Decision.Allowed)
	assert.NoError(t, e.Err, "a limiter decided it")
	assert.Equal(t, 1, e.Decision.Remaining, "and it took its quota")
}

// TestEmptyAPIKeyFallsBackToTheMethod: a WithAPI function that finds an
// empty key keys the call by its method, as WithAPI says.
func TestEmptyAPIKeyFallsBackToTheMethod(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	var rec recorder
	empty := func(context.Context, string, any) (string, bool) { return "", true }
	_, err := callUnary(context.Background(), grpclimit.UnaryServerInterceptor(svc,
		grpclimit.WithAPI(empty), grpclimit.WithObserver(rec.observe)))
	require.NoError(t, err)
	assert.Equal(t, unaryCall, rec.last().API)
}

// TestUntaggedUserKeyIsTheSubjectUser: a denial's QuotaFailure names the
// kind of the key as its subject, and "user" for an untagged key of the
// application's own, never an empty subject.
func TestUntaggedUserKeyIsTheSubjectUser(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	alice := func(context.Context, string, any) (string, bool) { return "alice", true }
	i := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(alice))
	_, err := callUnary(context.Background(), i)
	require.NoError(t, err)
	_, err = callUnary(context.Background(), i)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	_, qf := details(t, err)
	require.NotNil(t, qf)
	require.Len(t, qf.GetViolations(), 1)
	assert.Equal(t, "user", qf.GetViolations()[0].GetSubject())
}

// TestPeerWithoutAnAddressHasNoKey: a peer that carries no address (as a
// hand-made context may) gives no key, without a panic.
func TestPeerWithoutAnAddressHasNoKey(t *testing.T) {
	var key string
	var ok bool
	require.NotPanics(t, func() {
		key, ok = grpclimit.PeerIP()(peer.NewContext(context.Background(), &peer.Peer{}), unaryCall, nil)
	})
	assert.False(t, ok)
	assert.Empty(t, key)
}

// TestMetadataKeyBounds: a value of MaxHeaderValue bytes, 256, is kept as
// it is and one byte more is keyed by its digest; a key name ending in
// "bin" without the dash of "-bin" is text, whose spaces are trimmed; and
// FromRequest finds no key in an empty one.
func TestMetadataKeyBounds(t *testing.T) {
	in := func(k, v string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(k, v))
	}
	at := strings.Repeat("a", 256)
	key, ok := grpclimit.Metadata("x-tenant")(in("x-tenant", at), unaryCall, nil)
	assert.True(t, ok)
	assert.Equal(t, "header:x-tenant:"+at, key)
	key, _ = grpclimit.Metadata("x-tenant")(in("x-tenant", at+"a"), unaryCall, nil)
	assert.True(t, strings.HasPrefix(key, "header-sha256:x-tenant:"), key)

	key, ok = grpclimit.Metadata("x-cabin")(in("x-cabin", " a "), unaryCall, nil)
	assert.True(t, ok)
	assert.Equal(t, "header:x-cabin:a", key)

	key, ok = grpclimit.FromRequest("tenant", func(any) (string, bool) { return "", true })(context.Background(), unaryCall, struct{}{})
	assert.False(t, ok)
	assert.Empty(t, key)
}
