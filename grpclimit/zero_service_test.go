package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestZeroServiceIsNoService: a zero service.Service, which service.New did
// not build, failed every call with INTERNAL only because its first
// decision panicked on a nil pointer, recovered as a limiter's panic: the
// observer heard of a runtime error, where httplimit's middleware crashed
// the request. It is now the configuration error a nil service is, on the
// server and on the client: INTERNAL, the handler not reached, and the
// observer told to give the interceptor a service that service.New made
// (its Err said "no service configured", which did not say what to do).
func TestZeroServiceIsNoService(t *testing.T) {
	reached := false
	handler := func(context.Context, any) (any, error) { reached = true; return "reached", nil }
	var rec recorder
	_, err := grpclimit.UnaryServerInterceptor(&service.Service{}, grpclimit.WithObserver(rec.observe))(ctx(t), nil,
		&grpc.UnaryServerInfo{FullMethod: unaryCall}, handler)
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message())
	assert.False(t, reached, "no call goes through unlimited")
	assert.EqualError(t, rec.last().Err, "grpclimit: no service: give the interceptor one made by service.New or service.NewFromRules")

	invoke := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		reached = true
		return nil
	}
	err = grpclimit.UnaryClientInterceptor(&service.Service{}, grpclimit.WithObserver(rec.observe))(ctx(t), unaryCall, nil, nil, nil, invoke)
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.False(t, reached, "nor is sent")
	assert.EqualError(t, rec.last().Err, "grpclimit: no service: give the interceptor one made by service.New or service.NewFromRules")
}

// TestZeroServiceGivenRulesIsNoService: a zero service.Service that was
// offered rules (Replace refuses them) passed for built and decided calls
// under them when Replace took them. It is a missing service too.
func TestZeroServiceGivenRulesIsNoService(t *testing.T) {
	var svc service.Service
	require.Error(t, svc.Replace(service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}}}))
	reached := false
	handler := func(context.Context, any) (any, error) { reached = true; return "reached", nil }
	var rec recorder
	_, err := grpclimit.UnaryServerInterceptor(&svc, grpclimit.WithObserver(rec.observe))(ctx(t), nil,
		&grpc.UnaryServerInfo{FullMethod: unaryCall}, handler)
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.False(t, reached, "no call goes through")
	assert.EqualError(t, rec.last().Err, "grpclimit: no service: give the interceptor one made by service.New or service.NewFromRules")
}
