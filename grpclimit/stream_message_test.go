package grpclimit_test

import (
	"context"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestDeniedMessageTrailersDescribeItsRule: a stream passes at its start
// (100 a second) and its second message is denied by the messages' own rule
// (1 a second). The denial's trailers must describe that rule alone, as a
// denied call's do: the stream's start is another decision, under another
// API, and listing it after the denial's policy would tell the client that
// the messages' rule has two limits. A stream that sent its headers keeps
// the start's fields there.
func TestDeniedMessageTrailersDescribeItsRule(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("RECV "+inputCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	require.NoError(t, svc.ConfigureAPI("RECV "+duplexCall, cfg(hotlimit.FixedWindow, 1, time.Second)))
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true)))})
	client := testgrpc.NewTestServiceClient(cc)
	const deniedPolicy, deniedItem = `"fixedwindow-1-1s";q=1;w=1`, `"fixedwindow-1-1s";r=0;t=1`

	// Trailers-Only: the handler sent nothing before the denial.
	in, err := client.StreamingInputCall(ctx(t))
	require.NoError(t, err)
	for range 3 {
		if in.Send(&testgrpc.StreamingInputCallRequest{}) != nil {
			break // the server may end the stream before the client is done
		}
	}
	_, err = in.CloseAndRecv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	header, err := in.Header()
	require.NoError(t, err)
	assert.Empty(t, header.Get(grpclimit.MetadataPolicy), "a denial is Trailers-Only")
	assert.Equal(t, []string{deniedPolicy}, in.Trailer().Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{deniedItem}, in.Trailer().Get(grpclimit.MetadataRateLimit))
	assert.Equal(t, []string{"1000"}, in.Trailer().Get(grpclimit.MetadataPushback))

	// The handler answered the first message, with the start's headers.
	duplex, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, duplex.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = duplex.Recv()
	require.NoError(t, err)
	require.NoError(t, duplex.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = duplex.Recv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	header, err = duplex.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{`"fixedwindow-100-1s";q=100;w=1`}, header.Get(grpclimit.MetadataPolicy), "the start's")
	assert.Equal(t, []string{deniedPolicy}, duplex.Trailer().Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{deniedItem}, duplex.Trailer().Get(grpclimit.MetadataRateLimit))
}

// canceledStream is a server stream whose caller has left.
type canceledStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s canceledStream) Context() context.Context { return s.ctx }

// TestStreamOpenedAndClosedSpendsOne: as the docs say, a stream takes one
// when it starts, whatever it then sends: one opened and half-closed at
// once, with no message, has spent its one (and its end of input, with
// messages limited, takes nothing more), so the next is denied. A stream
// whose caller had left before it was decided takes nothing.
func TestStreamOpenedAndClosedSpendsOne(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc, grpclimit.WithStreamMessages(true), grpclimit.WithObserver(rec.observe)))})
	client := testgrpc.NewTestServiceClient(cc)

	left, leave := context.WithCancel(context.Background())
	leave()
	err := grpclimit.StreamServerInterceptor(svc)(nil, canceledStream{ctx: left}, &grpc.StreamServerInfo{FullMethod: duplexCall},
		func(any, grpc.ServerStream) error { t.Error("an ended stream is not served"); return nil })
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)

	s, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, s.CloseSend())
	_, err = s.Recv()
	require.ErrorIs(t, err, io.EOF)
	s, err = client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = s.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	events := rec.all()
	require.Len(t, events, 2, "one decision per stream, none for the end of input")
	assert.False(t, events[0].Message)
	assert.True(t, events[0].Decision.Allowed)
}

// TestServerStreamingCallTakesTwiceFromAQuotaPerUser: with
// WithStreamMessages, the one request of a server-streaming call is a
// received message like any other, limited under "RECV " and the method on
// top of the stream's start, as the docs say. Under a limit counted per
// pair (the default scope) the start and the message have quotas of their
// own, so a quota of 2 passes two calls; under one counted per user, in a
// rule that applies to both (here the default rule), they take from one
// quota, and a quota of 2 passes one call. A limit of the messages' own,
// one that differs from the start's, keeps them apart again.
func TestServerStreamingCallTakesTwiceFromAQuotaPerUser(t *testing.T) {
	perUser := cfg(hotlimit.FixedWindow, 2, time.Minute)
	perUser.Scope = hotlimit.PerUser
	ownMessages := perUser
	ownMessages.Window = 61 * time.Second
	for _, tc := range []struct {
		name     string
		def      hotlimit.Config
		messages *hotlimit.Config // the rule of "RECV " + outputCall, if any
		want     []codes.Code
		events   []string
	}{
		{"per pair", cfg(hotlimit.FixedWindow, 2, time.Minute), nil,
			[]codes.Code{codes.OK, codes.OK, codes.ResourceExhausted},
			[]string{"start r=1", "message r=1", "start r=0", "message r=0", "start denied"}},
		{"per user", perUser, nil,
			[]codes.Code{codes.OK, codes.ResourceExhausted, codes.ResourceExhausted},
			[]string{"start r=1", "message r=0", "start denied", "start denied"}},
		{"per user, messages apart", perUser, &ownMessages,
			[]codes.Code{codes.OK, codes.OK, codes.ResourceExhausted},
			[]string{"start r=1", "message r=1", "start r=0", "message r=0", "start denied"}},
	} {
		svc, _ := newService(t, tc.def, 0)
		if tc.messages != nil {
			require.NoError(t, svc.ConfigureAPI("RECV "+outputCall, *tc.messages))
		}
		var mu sync.Mutex
		var events []string
		observe := func(e grpclimit.Event) {
			what := "start"
			if e.Message {
				what = "message"
			}
			if e.Decision.Allowed {
				what += " r=" + strconv.Itoa(e.Decision.Remaining)
			} else {
				what += " denied"
			}
			mu.Lock()
			events = append(events, what)
			mu.Unlock()
		}
		ts := &testService{}
		cc := serveTCP(t, ts, []grpc.ServerOption{grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc,
			grpclimit.WithStreamMessages(true), grpclimit.WithObserver(observe)))})
		client := testgrpc.NewTestServiceClient(cc)
		var got []codes.Code
		for range 3 {
			stream, err := client.StreamingOutputCall(ctx(t), &testgrpc.StreamingOutputCallRequest{})
			if err == nil {
				_, err = stream.Recv()
			}
			got = append(got, status.Code(err))
		}
		assert.Equal(t, tc.want, got, tc.name)
		mu.Lock()
		assert.Equal(t, tc.events, events, tc.name)
		mu.Unlock()
		assert.EqualValues(t, slices.Index(tc.want, codes.ResourceExhausted), ts.received.Load(), "%s: the calls served", tc.name)
	}
}
