package grpclimit_test

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
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
	"github.com/hotlimit/hotlimit/service"
)

// echoService answers each message of a FullDuplexCall from a goroutine of
// its own, so that the stream sends while it receives.
type echoService struct {
	testgrpc.UnimplementedTestServiceServer
	received atomic.Int64
}

func (s *echoService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	out, sent := make(chan struct{}, 16), make(chan error, 1)
	go func() {
		var err error
		for range out {
			if err == nil {
				err = stream.Send(&testgrpc.StreamingOutputCallResponse{})
			}
		}
		sent <- err
	}()
	var err error
	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
		s.received.Add(1)
		out <- struct{}{}
	}
	close(out)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if serr := <-sent; err == nil {
		err = serr
	}
	return err
}

// TestManyStreamsMessagesPassExactlyTheLimit: with WithStreamMessages and
// the clock frozen, many streams of one client send messages at once, each
// handler sending as it receives. Every start passes, and exactly the limit
// of the messages' rule reaches the handlers; a stream whose message is
// denied fails with ResourceExhausted and one pushback and RateLimit value
// in its trailers, the others end well. The interceptor's observer and the
// service's hear of every decision once.
func TestManyStreamsMessagesPassExactlyTheLimit(t *testing.T) {
	var decisions, requests atomic.Int64
	observe := hotlimit.ObserverFunc(func(e hotlimit.Event) {
		decisions.Add(1)
		requests.Add(int64(e.N))
	})
	const messagesLimit = 150
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1000, time.Minute), 0, hotlimit.WithObserver(observe))
	require.NoError(t, svc.Replace(service.Rules{
		Default: service.Limits{cfg(hotlimit.FixedWindow, 1000, time.Minute)},
		APIs:    map[string]service.Limits{"RECV " + duplexCall: {cfg(hotlimit.FixedWindow, messagesLimit, time.Minute)}},
	}))
	var events, allowed atomic.Int64
	impl := &echoService{}
	cc := serveImpl(t, impl, grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc,
		grpclimit.WithStreamMessages(true),
		grpclimit.WithUser(grpclimit.FirstOf(grpclimit.Metadata("x-api-key"), grpclimit.PeerIP())),
		grpclimit.WithObserver(func(e grpclimit.Event) {
			events.Add(1)
			if e.Decision.Allowed {
				allowed.Add(1)
			}
		}))))
	client := testgrpc.NewTestServiceClient(cc)

	streams, each := 10, 30 // 300 messages against a limit of 150
	var ended, exhausted atomic.Int64
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			s, err := client.FullDuplexCall(ctx(t))
			if !assert.NoError(t, err) {
				return
			}
			go func() {
				for range each {
					if s.Send(&testgrpc.StreamingOutputCallRequest{}) != nil {
						break // the stream failed: Recv says why
					}
				}
				_ = s.CloseSend()
			}()
			for {
				_, err := s.Recv()
				switch {
				case err == nil:
					continue
				case errors.Is(err, io.EOF):
					ended.Add(1)
				case status.Code(err) == codes.ResourceExhausted:
					exhausted.Add(1)
					md := s.Trailer()
					assert.Len(t, md.Get(grpclimit.MetadataPushback), 1, "%v", md)
					assert.Len(t, md.Get(grpclimit.MetadataRateLimit), 1, "%v", md)
				default:
					t.Errorf("stream: %v", err)
				}
				return
			}
		})
	}
	wg.Wait()

	assert.EqualValues(t, messagesLimit, impl.received.Load(), "messages that reached the handlers")
	assert.EqualValues(t, streams, ended.Load()+exhausted.Load(), "every stream ended one way or the other")
	assert.Positive(t, exhausted.Load(), "a stream was denied")
	assert.EqualValues(t, streams+messagesLimit, allowed.Load(), "every start and the limit's messages passed")
	assert.Equal(t, events.Load(), decisions.Load(), "the service's observer hears of every decision")
	assert.Equal(t, events.Load(), requests.Load(), "each on one request")
}
