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
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestUnknownMethodsAreLimitedUnderABoundedKey: a server with an unknown
// service handler (a proxy that forwards every method) passes a method it
// does not register to the stream interceptor under the path the client
// sent, which may be most of grpc-go's 16 MiB header limit. Such a call is
// limited as any stream, but a method past 256 bytes is keyed by its first
// 256 bytes and its digest, so that a client inventing huge methods cannot
// make each key pin that much memory, while two such methods keep two
// quotas. A server without the handler answers an unknown method
// Unimplemented before any interceptor, and takes nothing.
func TestUnknownMethodsAreLimitedUnderABoundedKey(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec recorder
	unknown := func(_ any, ss grpc.ServerStream) error {
		var m testgrpc.Empty
		if err := ss.RecvMsg(&m); err != nil {
			return err
		}
		return ss.SendMsg(&m)
	}
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, grpclimit.WithObserver(rec.observe))),
		grpc.UnknownServiceHandler(unknown)})
	call := func(method string) codes.Code {
		return status.Code(cc.Invoke(ctx(t), method, &testgrpc.Empty{}, &testgrpc.Empty{}))
	}

	assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted}, []codes.Code{call("/no.Such/Method"), call("/no.Such/Method")},
		"an unknown method is limited as any other")
	assert.Equal(t, "/no.Such/Method", rec.last().API)

	long := "/x.Y/" + strings.Repeat("m", 64<<10)
	other := long[:len(long)-1] + "n" // the same first 256 bytes
	assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted, codes.OK},
		[]codes.Code{call(long), call(long), call(other)}, "one quota per method, however long")
	events := rec.all()
	require.Len(t, events, 5)
	for _, e := range events[2:] {
		assert.LessOrEqual(t, len(e.API), 256+len(" sha256:")+64, "the key is bounded")
		assert.True(t, strings.HasPrefix(e.API, long[:256]+" sha256:"), "the key keeps the first 256 bytes and the digest")
	}
	assert.Equal(t, events[2].API, events[3].API)
	assert.NotEqual(t, events[2].API, events[4].API)

	key, ok := grpclimit.FullMethod(context.Background(), long, nil)
	assert.True(t, ok)
	assert.Equal(t, events[2].API, key, "FullMethod keys a long method as the interceptor does")
	key, _ = grpclimit.FullMethod(context.Background(), long[:256], nil)
	assert.Equal(t, long[:256], key, "a method of 256 bytes is kept as it is")

	// Without the handler, grpc-go answers Unimplemented before any
	// interceptor runs: nothing is decided, nothing taken.
	svc2, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec2 recorder
	cc2 := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc2, grpclimit.WithObserver(rec2.observe))),
		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc2, grpclimit.WithObserver(rec2.observe)))})
	for _, m := range []string{"/no.Such/Method", "/grpc.testing.TestService/NoSuchMethod"} {
		err := cc2.Invoke(ctx(t), m, &testgrpc.Empty{}, &testgrpc.Empty{})
		assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	}
	assert.Empty(t, rec2.all())
}

// TestLongRequestFieldKeyIsBounded: FromRequest reads a key from the
// request message, which the client writes as freely as its metadata, up to
// the 4 MiB a message may hold. A value past 256 bytes is keyed by its
// digest, as Metadata keys one, so that a caller sending huge values cannot
// make each key pin that much memory; distinct values keep distinct keys.
func TestLongRequestFieldKeyIsBounded(t *testing.T) {
	field := grpclimit.FromRequest("tenant", func(req any) (string, bool) { s, ok := req.(string); return s, ok })
	long := strings.Repeat("t", 64<<10)
	other := long[:len(long)-1] + "u"
	key, ok := field(context.Background(), unaryCall, long)
	require.True(t, ok)
	assert.LessOrEqual(t, len(key), 128, "the key is bounded")
	assert.True(t, strings.HasPrefix(key, "tenant-sha256:"), "%.100s", key)
	again, _ := field(context.Background(), unaryCall, long)
	assert.Equal(t, key, again)
	otherKey, _ := field(context.Background(), unaryCall, other)
	assert.NotEqual(t, key, otherKey)
	short := strings.Repeat("t", 256)
	key, _ = field(context.Background(), unaryCall, short)
	assert.Equal(t, "tenant:"+short, key, "a value of 256 bytes is kept as it is")
}

// TestLongKeysCopyNothing: the key of a megabyte request field or method
// allocates its digest's few bytes, not a copy of the value, on every call
// that sends it.
func TestLongKeysCopyNothing(t *testing.T) {
	long := strings.Repeat("t", 1<<20)
	field := grpclimit.FromRequest("tenant", func(req any) (string, bool) { s, ok := req.(string); return s, ok })
	var key, method string
	allocated := limitertest.LeastAllocated(func() { key, _ = field(context.Background(), unaryCall, long) })
	assert.Less(t, allocated, uint64(4<<10), "bytes allocated by the key of a 1 MiB field")
	assert.True(t, strings.HasPrefix(key, "tenant-sha256:"), "%.100s", key)
	longMethod := "/x.Y/" + long
	allocated = limitertest.LeastAllocated(func() { method, _ = grpclimit.FullMethod(context.Background(), longMethod, nil) })
	assert.Less(t, allocated, uint64(4<<10), "bytes allocated by the key of a 1 MiB method")
	assert.Contains(t, method, " sha256:")
}

// TestExemptionCoversOnlyHealthAndReflectionMethods: grpc-go routes
// "/grpc.health.v1.Health/Check/x" to the service
// "grpc.health.v1.Health/Check", which is no health service: through a
// server with an unknown service handler (a proxy), such a path must stay
// limited, or a client could send unlimited calls by dressing them as
// health checks.
func TestExemptionCoversOnlyHealthAndReflectionMethods(t *testing.T) {
	for _, m := range []string{
		"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch", "/grpc.health.v1.Health/List",
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
	} {
		assert.True(t, grpclimit.HealthAndReflection(m), m)
	}
	for _, m := range []string{
		"/grpc.health.v1.Health/Check/x", "/grpc.health.v1.Health/", "/grpc.health.v1.Health//Check",
		"/grpc.reflection.v1.ServerReflection/a/b", "/grpc.health.v1.HealthX/Check", "grpc.health.v1.Health/Check",
	} {
		assert.False(t, grpclimit.HealthAndReflection(m), m)
	}

	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	unknown := func(any, grpc.ServerStream) error { return status.Error(codes.Unimplemented, "forwarded") }
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc)),
		grpc.UnknownServiceHandler(unknown)})
	var got []codes.Code
	for range 2 {
		got = append(got, status.Code(cc.Invoke(ctx(t), "/grpc.health.v1.Health/Check/x", &testgrpc.Empty{}, &testgrpc.Empty{})))
	}
	assert.Equal(t, []codes.Code{codes.Unimplemented, codes.ResourceExhausted}, got)
}

// TestInventedHealthMethodIsLimitedOnAProxy: through a server with an
// unknown service handler (a proxy that forwards every method), grpc-go
// passes "/grpc.health.v1.Health/" followed by any name the client invents
// to the stream interceptor, even when the server registers the health
// service itself. Only the methods the health and reflection services
// define are exempt: an invented one is limited as any unknown method, or a
// client could send unlimited calls through the proxy by naming them after
// the health service.
func TestInventedHealthMethodIsLimitedOnAProxy(t *testing.T) {
	for _, m := range []string{
		"/grpc.health.v1.Health/Invented", "/grpc.health.v1.Health/check",
		"/grpc.reflection.v1.ServerReflection/Invented",
		"/grpc.reflection.v1alpha.ServerReflection/" + strings.Repeat("x", 1<<10),
	} {
		assert.False(t, grpclimit.HealthAndReflection(m), "%.60s", m)
	}
	for _, m := range []string{ // every method the services define
		healthpb.Health_Check_FullMethodName, healthpb.Health_Watch_FullMethodName, healthpb.Health_List_FullMethodName,
		reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName,
		reflectionv1alpha.ServerReflection_ServerReflectionInfo_FullMethodName,
	} {
		assert.True(t, grpclimit.HealthAndReflection(m), m)
	}

	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var forwarded atomic.Int32
	unknown := func(any, grpc.ServerStream) error {
		forwarded.Add(1)
		return status.Error(codes.Unimplemented, "forwarded")
	}
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc)),
		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc)),
		grpc.UnknownServiceHandler(unknown)})
	var got []codes.Code
	for range 3 {
		got = append(got, status.Code(cc.Invoke(ctx(t), "/grpc.health.v1.Health/Invented", &testgrpc.Empty{}, &testgrpc.Empty{})))
	}
	assert.Equal(t, []codes.Code{codes.Unimplemented, codes.ResourceExhausted, codes.ResourceExhausted}, got)
	assert.Equal(t, int32(1), forwarded.Load(), "only the call the limit passed is forwarded")

	// The health service the server registers stays exempt.
	for range 3 {
		_, err := healthpb.NewHealthClient(cc).Check(ctx(t), &healthpb.HealthCheckRequest{})
		assert.NoError(t, err)
	}
}
