package grpclimit_test

import (
	"strings"
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

// TestObserversCountEveryCallConcurrently: calls from one client to two
// methods, from many goroutines, with the clock frozen. Each method's rule
// passes exactly its limit; the service's observer hears of every call once,
// under the method's rule, with N 1 and the outcome the client got; the
// interceptor's observer hears of every call once.
func TestObserversCountEveryCallConcurrently(t *testing.T) {
	var mu sync.Mutex
	decisions, requests := map[string]int{}, map[string]int{}
	observe := hotlimit.ObserverFunc(func(e hotlimit.Event) {
		k := e.RuleName() + " " + e.Outcome.String()
		mu.Lock()
		decisions[k]++
		requests[k] += e.N
		mu.Unlock()
	})
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 7, time.Minute), 0, hotlimit.WithObserver(observe))
	require.NoError(t, svc.Replace(service.Rules{
		Default: service.Limits{cfg(hotlimit.FixedWindow, 7, time.Minute)},
		APIs:    map[string]service.Limits{unaryCall: {cfg(hotlimit.FixedWindow, 5, time.Minute)}},
	}))
	var events, allowed atomic.Int64
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(func(e grpclimit.Event) {
			events.Add(1)
			if e.Decision.Allowed {
				allowed.Add(1)
			}
		})))})
	client := testgrpc.NewTestServiceClient(cc)

	goroutines, each := 8, 40
	if testing.Short() {
		each = 10
	}
	var passed [2]atomic.Int64 // UnaryCall, EmptyCall
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				var err error
				m := (g + i) % 2
				if m == 0 {
					_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
				} else {
					_, err = client.EmptyCall(ctx(t), &testgrpc.Empty{})
				}
				switch status.Code(err) {
				case codes.OK:
					passed[m].Add(1)
				case codes.ResourceExhausted:
				default:
					t.Errorf("call: %v", err)
				}
			}
		})
	}
	wg.Wait()

	total := goroutines * each
	perMethod := total / 2
	assert.EqualValues(t, 5, passed[0].Load(), "UnaryCall passes its API's limit")
	assert.EqualValues(t, 7, passed[1].Load(), "EmptyCall passes the default")
	assert.EqualValues(t, total, events.Load(), "the interceptor's observer hears of every call")
	assert.EqualValues(t, 12, allowed.Load())

	sum := func(m map[string]int, rule string) int {
		n := 0
		for k, v := range m {
			if strings.HasPrefix(k, rule+" ") {
				n += v
			}
		}
		return n
	}
	unary := `apis["` + unaryCall + `"]`
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, perMethod, sum(decisions, unary), "one decision per call to UnaryCall")
	assert.Equal(t, perMethod, sum(requests, unary), "N is 1")
	assert.Equal(t, perMethod, sum(decisions, "default"))
	assert.Equal(t, perMethod-5, decisions[unary+" denied"])
	assert.Equal(t, perMethod-7, decisions["default denied"])
	assert.Equal(t, 2, decisions[unary+" near_limit"], "Remaining 1 and 0 of 5")
	assert.Equal(t, 2, decisions["default near_limit"], "Remaining 1 and 0 of 7")
}
