package tokenbucket

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestRefundKeepsAnAdmissionThatLandsFirst: a Refund and an admission on
// the same key race, under a frozen clock; the refund swaps its word in
// only over the word it loaded, so an admission that lands between its
// load and its swap fails the swap, and the refund gives back from the
// admission's word: the key holds both, one token taken and one given back
// (see limitertest.WriteAndRefundBothCount). A refund that stored its word
// would erase the admission, a token the key never gave.
func TestRefundKeepsAnAdmissionThatLandsFirst(t *testing.T) {
	l, err := New(10, time.Second, hotlimit.WithClock(func() int64 { return 0 }))
	require.NoError(t, err)
	d, r := l.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	require.True(t, l.Take("k", 4).Allowed) // 5 left: a refund fills nothing
	c, held := l.cells.Peek("k")
	require.True(t, held)
	w0 := c.word.Load()
	tokens, last := l.b.Unpack(w0)
	admitted := l.b.Pack(tokens-l.unit, last) // one more taken at the same time
	rounds := limitertest.RaceRounds()
	limitertest.WriteAndRefundBothCount(t, rounds,
		func() { c.word.Store(w0) },
		func() bool { return c.word.CompareAndSwap(w0, admitted) },
		func() { l.Refund("k", r) },
		func(wrote bool) bool {
			if wrote {
				return c.word.Load() == w0 // the token taken, and the one given back
			}
			return c.word.Load() == l.b.Pack(tokens+l.unit, last) // the refund alone
		})
}
