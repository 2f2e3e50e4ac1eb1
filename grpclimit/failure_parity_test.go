package grpclimit_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestFailureMetadataEqualsHTTPLimitsFields: for one rule and one backend
// failure, a gRPC call over loopback is told what an HTTP request to
// httplimit over loopback is told: the same ratelimit-policy items and
// ratelimit items (none for a limit that could not decide), and a
// pushback of the Retry-After's wait, and a status of the same meaning.
// Rules: a limit on an unreachable backend, failing open or closed, alone
// and listed after or before a memory limit of one a minute, whose second
// call that memory limit denies when the backend's fails open.
func TestFailureMetadataEqualsHTTPLimitsFields(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, tc := range []struct {
		name   string
		rule   service.Limits
		closed bool
	}{
		{"alone open", service.Limits{remote}, false},
		{"alone closed", service.Limits{remote}, true},
		{"listed after a memory limit, open", service.Limits{memory, remote}, false},
		{"listed after a memory limit, closed", service.Limits{memory, remote}, true},
		{"listed before a memory limit, open", service.Limits{remote, memory}, false},
		{"listed before a memory limit, closed", service.Limits{remote, memory}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newSvc := func() *service.Service {
				svc, err := service.NewFromRules(service.Rules{Default: tc.rule}, hotlimit.WithClock(func() int64 { return 1 }),
					limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: tc.closed}, service.NewLimiter))
				require.NoError(t, err)
				return svc
			}
			hs := httptest.NewServer(httplimit.New(newSvc())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			t.Cleanup(hs.Close)
			cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(newSvc()))})
			for i := range 2 {
				resp, err := http.Get(hs.URL)
				require.NoError(t, err)
				_ = resp.Body.Close()
				var header, trailer metadata.MD
				_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
				md := header
				if err != nil {
					md = trailer
				}
				assert.Equal(t, resp.Header.Values("RateLimit-Policy"), md.Get(grpclimit.MetadataPolicy), "call %d", i)
				assert.Equal(t, resp.Header.Values("RateLimit"), md.Get(grpclimit.MetadataRateLimit), "call %d", i)
				switch resp.StatusCode {
				case http.StatusOK:
					assert.NoError(t, err, "call %d", i)
				case http.StatusTooManyRequests:
					assert.Equal(t, codes.ResourceExhausted, status.Code(err), "call %d", i)
				case http.StatusServiceUnavailable:
					assert.Equal(t, codes.Unavailable, status.Code(err), "call %d", i)
				}
				if ra := resp.Header.Get("Retry-After"); ra != "" {
					s, _ := strconv.Atoi(ra)
					assert.Equal(t, []string{strconv.Itoa(s * 1000)}, md.Get(grpclimit.MetadataPushback), "call %d", i)
				}
			}
		})
	}
}
