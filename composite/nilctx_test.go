package composite_test

//lint:file-ignore SA1012 these tests pass a nil context on purpose: the API accepts one

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestNilContextIsBackground: TakeContext, TakeReceiptContext and
// RefundContext read a nil ctx as context.Background(), as their
// documentation says: the children that take a context are asked under it,
// and their errors come back. A child whose backend cannot be reached, and
// whose failure policy denies, denies the request with its error under a
// nil ctx as under Background.
func TestNilContextIsBackground(t *testing.T) {
	build := func() *composite.Limiter {
		c, err := composite.New(newRemote(t, 5), &limitertest.UnreachableRefunder{Closed: true})
		require.NoError(t, err)
		return c
	}
	want, wantErr := build().TakeContext(context.Background(), "k", 1)
	require.False(t, want.Allowed, "the unreachable child's failure policy denies")
	require.ErrorIs(t, wantErr, limitertest.ErrUnreachable)

	d, err := build().TakeContext(nil, "k", 1)
	assert.Equal(t, want, d, "TakeContext(nil)")
	assert.ErrorIs(t, err, limitertest.ErrUnreachable, "TakeContext(nil)")

	d, r, err := build().TakeReceiptContext(nil, "k", 1)
	assert.Equal(t, want, d, "TakeReceiptContext(nil)")
	assert.Zero(t, r)
	assert.ErrorIs(t, err, limitertest.ErrUnreachable, "TakeReceiptContext(nil)")

	counting := newRemote(t, 5)
	c, err := composite.New(counting)
	require.NoError(t, err)
	require.True(t, counting.Take("k", 2).Allowed)
	assert.NoError(t, c.RefundContext(nil, "k", hotlimit.Receipt{N: 2, At: 1}))
	require.Len(t, counting.refunds, 1)
	assert.NotNil(t, counting.refunds[0], "RefundContext(nil): the child is given back under Background")
	assert.Equal(t, 5, counting.Take("k", 0).Remaining, "RefundContext(nil) gave back")
}
