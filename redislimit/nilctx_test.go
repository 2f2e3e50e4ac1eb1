package redislimit_test

//lint:file-ignore SA1012 these tests pass a nil context on purpose: the API accepts one

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestNilContextIsBackground: TakeContext, TakeReceiptContext,
// RefundContext and TakeAll read a nil ctx as context.Background(), as
// composite's do, and so does a service whose rule is on Redis: Redis
// decides, nothing panics.
func TestNilContextIsBackground(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Hour}
	lim := newExact(t, client, c)

	var d hotlimit.Decision
	var r hotlimit.Receipt
	var err error
	require.NotPanics(t, func() { d, err = lim.TakeContext(nil, "a", 1) }, "TakeContext")
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 1, d.Remaining)

	require.NotPanics(t, func() { d, r, err = lim.TakeReceiptContext(nil, "a", 1) }, "TakeReceiptContext")
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Zero(t, d.Remaining)

	require.NotPanics(t, func() { err = lim.RefundContext(nil, "a", r) }, "RefundContext")
	require.NoError(t, err)
	assert.Equal(t, 1, take(t, lim, "a", 0).Remaining, "the refund reached Redis")

	takes := []redislimit.Take{{Limiter: lim, Key: "b", N: 2}, {Limiter: lim, Key: "a", N: 1}}
	require.NotPanics(t, func() { redislimit.TakeAll(nil, takes) }, "TakeAll")
	for i, tk := range takes {
		require.NoError(t, tk.Err, "take %d", i)
		assert.True(t, tk.Decision.Allowed, "take %d", i)
		assert.Zero(t, tk.Decision.Remaining, "take %d", i)
	}

	s, err := service.New(c, hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NotPanics(t, func() { d, err = s.TakeContext(nil, "u", "GET /", 1) }, "service TakeContext")
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 1, d.Remaining)
}
