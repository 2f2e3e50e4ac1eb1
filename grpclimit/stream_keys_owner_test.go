package grpclimit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// streamKeys runs a stream of three messages under WithStreamMessages, its
// user and API read by Metadata from two entries, and returns the User and
// API of its four decisions, the start's first.
func streamKeys(t *testing.T, ss grpc.ServerStream) (users, apis []string) {
	t.Helper()
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false),
		grpclimit.WithUser(grpclimit.Metadata("x-user")), grpclimit.WithAPI(grpclimit.Metadata("x-key")),
		grpclimit.WithObserver(func(e grpclimit.Event) {
			users, apis = append(users, e.User), append(apis, e.API)
		}))
	err = icpt(nil, ss, &grpc.StreamServerInfo{FullMethod: duplexCall}, func(_ any, ss grpc.ServerStream) error {
		var m struct{}
		for range 3 {
			if err := ss.RecvMsg(&m); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, users, 4)
	return users, apis
}

// TestStreamMessagesKeepEachKeyFunctionsOwnKey: the keys a stream remembers
// for its messages are remembered per key function: a message's user is
// what the user's function found, its API what the API's found, never the
// other's, for short values and for long ones keyed by digest (equal values
// of two entries are two keys, each of its own entry's kind).
func TestStreamMessagesKeepEachKeyFunctionsOwnKey(t *testing.T) {
	for name, values := range map[string][2]string{
		"short": {"u-1", "k-1"},
		"long":  {strings.Repeat("v", 300), strings.Repeat("v", 300)},
	} {
		t.Run(name, func(t *testing.T) {
			md := metadata.Pairs("x-user", values[0], "x-key", values[1])
			users, apis := streamKeys(t, recvStream{ctx: metadata.NewIncomingContext(context.Background(), md)})
			for i := range users {
				assert.Contains(t, users[i], ":x-user:", "decision %d's user", i)
				assert.Equal(t, users[0], users[i], "decision %d's user", i)
				assert.Contains(t, apis[i], ":x-key:", "decision %d's API", i)
				assert.NotContains(t, apis[i], "x-user", "decision %d's API", i)
			}
		})
	}
}

// uncomparableCtx is a context that == cannot compare: a stream wrapper may
// give one, a struct value with a map in it.
type uncomparableCtx struct {
	context.Context
	tags map[string]string
}

// uncomparableStream gives a new uncomparableCtx at each call.
type uncomparableStream struct{ recvStream }

func (s uncomparableStream) Context() context.Context {
	return uncomparableCtx{Context: s.ctx, tags: map[string]string{}}
}

// TestStreamMessagesUnderAnUncomparableContext: a stream whose context is
// of a type that == cannot compare has each message decided under it (as a
// context of its own each time), without a panic.
func TestStreamMessagesUnderAnUncomparableContext(t *testing.T) {
	md := metadata.Pairs("x-user", "u-1", "x-key", "k-1")
	users, apis := streamKeys(t, uncomparableStream{recvStream{ctx: metadata.NewIncomingContext(context.Background(), md)}})
	for i := range users {
		assert.Equal(t, "header:x-user:u-1", users[i], "decision %d", i)
		assert.Contains(t, apis[i], "header:x-key:k-1", "decision %d", i)
	}
}
