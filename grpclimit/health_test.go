package grpclimit_test

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func registerHealth(srv *grpc.Server) {
	healthpb.RegisterHealthServer(srv, health.NewServer())
}
