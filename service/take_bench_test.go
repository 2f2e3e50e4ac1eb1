package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// BenchmarkTakeOneLimit measures Take, TakePolicy, TakePolicyContext,
// TakeEach (with room for the limits on the caller's stack), TakeReceipt,
// and TakeReceipt followed by Refund on a rule of one limit and a pair seen
// before, with a limit high enough that
// every call passes.
//
//	go test -run '^$' -bench BenchmarkTakeOneLimit -benchmem ./service/
func BenchmarkTakeOneLimit(b *testing.B) {
	ctx := context.Background()
	for _, call := range []struct {
		name string
		take func(*service.Service) hotlimit.Decision
	}{
		{"Take", func(s *service.Service) hotlimit.Decision { return s.Take("u", "api", 1) }},
		{"TakePolicy", func(s *service.Service) hotlimit.Decision { d, _ := s.TakePolicy("u", "api", 1); return d }},
		{"TakePolicyContext", func(s *service.Service) hotlimit.Decision {
			d, _, _ := s.TakePolicyContext(ctx, "u", "api", 1)
			return d
		}},
		{"TakeEach", func(s *service.Service) hotlimit.Decision {
			var buf [4]service.LimitDecision
			_, each, _ := s.TakeEach(ctx, "u", "api", 1, buf[:0])
			return each[0].Decision
		}},
		{"TakeReceipt", func(s *service.Service) hotlimit.Decision { d, _ := s.TakeReceipt("u", "api", 1); return d }},
		{"TakeReceipt+Refund", func(s *service.Service) hotlimit.Decision {
			d, r := s.TakeReceipt("u", "api", 1)
			s.Refund(r)
			return d
		}},
	} {
		b.Run("call="+call.name, func(b *testing.B) {
			s, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 16, Window: time.Millisecond}, hotlimit.WithAutoSweep(0))
			require.NoError(b, err)
			require.True(b, call.take(s).Allowed)
			b.ReportAllocs()
			for b.Loop() {
				call.take(s)
			}
		})
	}
}
