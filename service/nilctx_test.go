package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestNilContextIsBackground: TakeContext, TakePolicyContext, TakeEach and
// TakeWithContext read a nil ctx as context.Background(), under a rule of
// one limit and under a rule of several alike: a limit whose backend cannot
// be reached, and whose failure policy denies, denies with its error under
// a nil ctx as under Background, and is not asked without a context
// instead (where it would pass, counting nothing, and its error would be
// lost).
func TestNilContextIsBackground(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	type result struct {
		d   hotlimit.Decision
		c   hotlimit.Config
		n   int // limits TakeEach listed
		err error
	}
	calls := map[string]func(s *service.Service, ctx context.Context) result{
		"TakeContext": func(s *service.Service, ctx context.Context) result {
			d, err := s.TakeContext(ctx, "u", "GET /", 1)
			return result{d: d, err: err}
		},
		"TakePolicyContext": func(s *service.Service, ctx context.Context) result {
			d, c, err := s.TakePolicyContext(ctx, "u", "GET /", 1)
			return result{d: d, c: c, err: err}
		},
		"TakeEach": func(s *service.Service, ctx context.Context) result {
			d, each, err := s.TakeEach(ctx, "u", "GET /", 1, nil)
			return result{d: d, n: len(each), err: err}
		},
		"TakeWithContext": func(s *service.Service, ctx context.Context) result {
			d, err := s.TakeWithContext(ctx, "u", "GET /", remote, 1)
			return result{d: d, err: err}
		},
	}
	for _, rule := range []service.Limits{{remote}, {memory, remote}} {
		for name, call := range calls {
			build := func() *service.Service {
				s, err := service.NewFromRules(service.Rules{Default: rule},
					limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: true}, service.NewLimiter))
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			want := call(build(), context.Background())
			require.False(t, want.d.Allowed, "%s, %d limits: the backend's failure policy denies", name, len(rule))
			require.ErrorIs(t, want.err, limitertest.ErrUnreachable, "%s, %d limits", name, len(rule))
			var got result
			require.NotPanics(t, func() { got = call(build(), nil) }, "%s, %d limits", name, len(rule))
			assert.Equal(t, want.d, got.d, "%s, %d limits", name, len(rule))
			assert.Equal(t, want.c, got.c, "%s, %d limits", name, len(rule))
			assert.Equal(t, want.n, got.n, "%s, %d limits", name, len(rule))
			assert.ErrorIs(t, got.err, limitertest.ErrUnreachable, "%s, %d limits", name, len(rule))
		}
	}
}
