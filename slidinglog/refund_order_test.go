package slidinglog_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestDeniedRequestReportsNoRemaining: a refund that reads a later clock
// than the decisions after it (racing them, or run before the clock stepped
// back) can mark a newer entry where an older one has left the window at its
// reading but not at theirs, so the entries free at their reading no longer
// form a prefix of the ring from the head. A single request denied there (the
// head's entry counts) must still report Remaining 0, as no single request
// passes; a count of the ring that assumed a prefix reported more. Scripts
// of requests, refunds read up to 60 ms later and checks, from fixed seeds.
func TestDeniedRequestReportsNoRemaining(t *testing.T) {
	const ms = int64(time.Millisecond)
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		limit := 2 + rng.IntN(8)
		var now atomic.Int64
		l, err := slidinglog.New(limit, 100*time.Millisecond, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		at := int64(0)
		var receipts []hotlimit.Receipt
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 4:
				at += int64(rng.IntN(40)) * ms
				now.Store(at)
				if _, r := l.TakeReceipt("k", 1); r.N > 0 {
					receipts = append(receipts, r)
				}
			case op < 6 && len(receipts) > 0:
				now.Store(at + int64(rng.IntN(60))*ms)
				i := rng.IntN(len(receipts))
				l.Refund("k", receipts[i])
				receipts = append(receipts[:i], receipts[i+1:]...)
				now.Store(at)
			default:
				for range limit + 1 {
					allowed, remaining := l.AllowRemaining("k")
					if !allowed {
						require.Zero(t, remaining, "seed %d step %d: AllowRemaining denied", seed, step)
						d := l.Take("k", 1)
						require.False(t, d.Allowed)
						require.Zero(t, d.Remaining, "seed %d step %d: Take(k, 1) denied", seed, step)
						break
					}
				}
			}
		}
	}
}
