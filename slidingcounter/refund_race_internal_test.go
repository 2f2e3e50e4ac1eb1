package slidingcounter

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
// admission's word: the key counts both, one request more and one less
// (see limitertest.WriteAndRefundBothCount). A refund that stored its word
// would erase the admission, a request the key would not count.
func TestRefundKeepsAnAdmissionThatLandsFirst(t *testing.T) {
	l, err := New(10, time.Second, hotlimit.WithClock(func() int64 { return 0 }))
	require.NoError(t, err)
	d, r := l.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	require.True(t, l.Take("k", 2).Allowed) // 3 counted: a refund leaves some
	c, held := l.cells.Peek("k")
	require.True(t, held)
	w0 := c.word.Load()
	index, prev, count := unpack(w0)
	require.Equal(t, uint64(3), count)
	rounds := limitertest.RaceRounds()
	limitertest.WriteAndRefundBothCount(t, rounds,
		func() { c.word.Store(w0) },
		func() bool { return c.word.CompareAndSwap(w0, pack(index, prev, count+1)) }, // one more at the same time
		func() { l.Refund("k", r) },
		func(wrote bool) bool {
			if wrote {
				return c.word.Load() == w0 // the request counted, and the one given back
			}
			return c.word.Load() == pack(index, prev, count-1) // the refund alone
		})
}
