package grpclimit_test

//lint:file-ignore SA1012 these tests pass a nil context on purpose: the API must not panic on one

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestMiddlewareLimiterNilContext: Limit with a nil context, which names no
// call, fails with codes.Internal, as a panicking key function does, and
// the observer hears why; it does not panic. Under dry run it passes.
func TestMiddlewareLimiterNilContext(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var rec recorder
	lim := grpclimit.MiddlewareLimiter(svc, grpclimit.WithObserver(rec.observe))
	var err error
	require.NotPanics(t, func() { err = lim.Limit(nil) })
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.ErrorIs(t, rec.last().Err, hotlimit.ErrInvalidConfig)

	dry := grpclimit.MiddlewareLimiter(svc, grpclimit.WithDryRun(true))
	require.NotPanics(t, func() { err = dry.Limit(nil) })
	assert.NoError(t, err)
}
