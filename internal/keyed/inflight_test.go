package keyed

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInflightCountsOutOnTheStripeCountedIn: exit takes an insertion off
// the stripe enter put it on, so no stripe reads below zero and the count
// reads zero only once every insertion counted in is counted out, in any
// order.
func TestInflightCountsOutOnTheStripeCountedIn(t *testing.T) {
	var f inflight
	require.True(t, f.idle(nil))
	var in []int
	for range 100 {
		in = append(in, f.enter())
	}
	assert.EqualValues(t, 100, f.count())
	for k := len(in) - 1; k >= 0; k-- { // the reverse order
		require.False(t, f.idle(nil), "%d still counted in", k+1)
		f.exit(in[k])
		for i := range f.stripes {
			require.GreaterOrEqual(t, f.stripes[i].n.Load(), int64(0), "stripe %d", i)
		}
	}
	assert.True(t, f.idle(nil))
	assert.Zero(t, f.count())
}
