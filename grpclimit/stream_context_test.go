package grpclimit_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// tenantStream is the stream of an interceptor that authenticates each
// message of a stream on its own: once a message is received, the stream's
// context names the message's sender, in its metadata (x-tenant) and as a
// context value (tenantKey), for what runs after.
type tenantStream struct {
	grpc.ServerStream
	ctx atomic.Pointer[context.Context]
}

// tenantKey is the context key under which tenantStream names the sender.
type tenantKey struct{}

func (s *tenantStream) Context() context.Context { return *s.ctx.Load() }

func (s *tenantStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	tenant := string(m.(*testgrpc.StreamingOutputCallRequest).GetPayload().GetBody())
	ctx := metadata.NewIncomingContext(s.ServerStream.Context(), metadata.Pairs("x-tenant", tenant))
	ctx = context.WithValue(ctx, tenantKey{}, tenant)
	s.ctx.Store(&ctx)
	return nil
}

// perMessageTenant is the interceptor that wraps a stream in tenantStream.
func perMessageTenant(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ts := &tenantStream{ServerStream: ss}
	ctx := ss.Context()
	ts.ctx.Store(&ctx)
	return handler(srv, ts)
}

// TestStreamMessagesKeyedUnderTheStreamsContextOfTheirTime: with
// WithStreamMessages, each message's user is found in the stream's context
// as the stream gives it when the message is received, so an interceptor
// chained before the limit that names each message's sender in the
// stream's context (per-message authentication) has each message keyed
// by its own sender, in its metadata ([Metadata]) or in a context value
// ([ContextValue]): a message is never keyed by what the stream's start,
// or an earlier message, carried.
func TestStreamMessagesKeyedUnderTheStreamsContextOfTheirTime(t *testing.T) {
	for name, user := range map[string]grpclimit.KeyFunc{
		"Metadata":     grpclimit.Metadata("x-tenant"),
		"ContextValue": grpclimit.ContextValue(tenantKey{}),
	} {
		t.Run(name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
			require.NoError(t, svc.Replace(service.Rules{
				Default: service.Limits{cfg(hotlimit.FixedWindow, 100, time.Minute)},
				APIs:    map[string]service.Limits{"RECV " + duplexCall: {cfg(hotlimit.FixedWindow, 1, time.Minute)}},
			}))
			var rec recorder
			cc := serveImpl(t, &testService{}, grpc.ChainStreamInterceptor(perMessageTenant,
				grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true),
					grpclimit.WithUser(user), grpclimit.WithObserver(rec.observe))))
			s, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(ctx(t))
			require.NoError(t, err)
			for _, tenant := range []string{"a", "b", "c"} { // one message each: every one within its quota
				require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte(tenant)}}))
				_, err = s.Recv()
				require.NoError(t, err, "tenant %s's message", tenant)
			}
			require.NoError(t, s.CloseSend())
			events := rec.all()
			require.Len(t, events, 4)
			users := make([]string, len(events))
			for i, e := range events {
				users[i] = e.User
			}
			kind := "header:x-tenant:"
			if name == "ContextValue" {
				kind = "context:grpclimit_test.tenantKey:"
			}
			assert.Equal(t, []string{"", kind + "a", kind + "b", kind + "c"}, users, "the start, then each message's sender")
		})
	}
}

// changingStream is a stream whose Context is a new context at each call,
// made from ctx, as a wrapper that derives it on demand gives it.
type changingStream struct{ recvStream }

func (s changingStream) Context() context.Context {
	return context.WithValue(s.ctx, tenantKey{}, "t")
}

// TestLongMethodDigestedOncePerStreamWhoseContextChanges: a stream whose
// context is another at each message has its messages keyed under each,
// but a long method, whose key depends on the method alone, is still
// digested once per stream, not copied and digested per message.
func TestLongMethodDigestedOncePerStreamWhoseContextChanges(t *testing.T) {
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	long := "/x.Y/" + strings.Repeat("m", 1<<20)
	var apis []string
	icpt := grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithRateLimitHeaders(false),
		grpclimit.WithUser(grpclimit.ContextValue(tenantKey{})),
		grpclimit.WithObserver(func(e grpclimit.Event) {
			if len(apis) < 3 {
				apis = append(apis, e.API)
			}
		}))
	const messages = 20
	perMessage := bytesPerMessage(t, icpt, changingStream{recvStream{ctx: context.Background()}}, long, messages)
	assert.Less(t, perMessage, uint64(len(long)/64), "bytes allocated per message, against a method of %d", len(long))
	key, _ := grpclimit.FullMethod(context.Background(), long, nil)
	assert.Equal(t, []string{key, "RECV " + key, "RECV " + key}, apis, "the start and its messages keep their keys")
}
