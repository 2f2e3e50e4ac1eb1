package main

import (
	"context"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthServer is gRPC's health server, but for Watch, which ends once the
// drain has begun and the watcher has been told that the service is not
// serving: a watch is held open for as long as its client likes, and gRPC's
// GracefulStop waits for every call, so one watch would otherwise hold up
// the stop until -drain cuts it.
type healthServer struct {
	*health.Server
	draining context.Context // done once the drain begins
}

// Watch is health.Server's Watch, ended with status OK once the drain has
// begun and the last status sent is not SERVING: NOT_SERVING, which the
// drain's Shutdown sends to every watcher of a known service, or
// SERVICE_UNKNOWN for another, which nothing changes.
func (h healthServer) Watch(in *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	w := &drainingWatch{Health_WatchServer: stream, ctx: ctx, cancel: cancel}
	defer context.AfterFunc(h.draining, w.drain)()
	err := h.Server.Watch(in, w)
	if ctx.Err() != nil && stream.Context().Err() == nil {
		return nil // ended by the drain, the watcher told
	}
	return err
}

// drainingWatch is a Watch's stream whose context is canceled once the drain
// has begun and a status other than SERVING has been sent.
type drainingWatch struct {
	healthpb.Health_WatchServer
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	draining bool                                       // the drain has begun
	sent     bool                                       // a status was sent
	last     healthpb.HealthCheckResponse_ServingStatus // the last one sent
}

// Context is the context health.Server's Watch ends with.
func (w *drainingWatch) Context() context.Context { return w.ctx }

// Send sends r, then ends the watch if the drain has begun and r is not
// SERVING.
func (w *drainingWatch) Send(r *healthpb.HealthCheckResponse) error {
	err := w.Health_WatchServer.Send(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent, w.last = true, r.GetStatus()
	w.endIfTold()
	return err
}

// drain marks the drain begun, and ends the watch if the watcher was last
// told a status other than SERVING; otherwise the next Send ends it.
func (w *drainingWatch) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.draining = true
	w.endIfTold()
}

// endIfTold cancels the watch's context once the drain has begun and the
// last status sent is not SERVING. w.mu is held.
func (w *drainingWatch) endIfTold() {
	if w.draining && w.sent && w.last != healthpb.HealthCheckResponse_SERVING {
		w.cancel()
	}
}

// endReflectionOnDrain ends the server reflection streams once the drain
// begins, as a client ends one, for the same reason as healthServer's
// Watch: a tool that browses the server keeps its reflection stream open.
func endReflectionOnDrain(draining context.Context) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !strings.HasPrefix(info.FullMethod, "/grpc.reflection.") {
			return handler(srv, ss)
		}
		return handler(srv, &drainingStream{ServerStream: ss, draining: draining})
	}
}

// drainingStream is a stream whose RecvMsg returns io.EOF, as when the
// client ends the stream, once draining is done.
type drainingStream struct {
	grpc.ServerStream
	draining context.Context
}

// RecvMsg receives into m, or returns io.EOF once the drain begins. A
// receive under way then goes on, on a goroutine of its own, until the
// stream ends, which the handler's return brings about; m, which the
// handler no longer reads, gets what it receives, if anything.
func (s *drainingStream) RecvMsg(m any) error {
	if s.draining.Err() != nil {
		return io.EOF
	}
	got := make(chan error, 1)
	go func() { got <- s.ServerStream.RecvMsg(m) }()
	select {
	case err := <-got:
		return err
	case <-s.draining.Done():
		return io.EOF
	}
}
