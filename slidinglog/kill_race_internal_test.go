package slidinglog

import (
	"sync/atomic"
	"testing"

	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestKillLosesToAClaim: a sweep's kill of a key whose every logged request
// has expired and a claim on it race; the kill swaps the tombstone into the
// next claim's slot only over the stamp it read there, so when the claim's
// swap lands first the kill fails and the key keeps the claim: never both
// (see limitertest.KillOrWriteNotBoth). A kill that stored its tombstone
// instead would erase a request already admitted, and the key's next
// caller would find a fresh key with its whole limit.
func TestKillLosesToAClaim(t *testing.T) {
	const (
		L      = 3
		logged = 100  // claims 0 to L − 1, all at this time
		window = 1000 // so that they are expired at now
		now    = logged + window + 1
	)
	rounds := limitertest.RaceRounds()
	c := &cell{slots: make([]atomic.Int64, L)}
	old := packed.PackStamp(logged, 0) // claim h − L's stamp in slot h mod L, h = L
	limitertest.KillOrWriteNotBoth(t, rounds,
		func() {
			for i := range c.slots {
				c.slots[i].Store(old ^ freshStamp)
			}
			c.head.Store(L)
		},
		func() bool { return c.cas(0, old, packed.PackStamp(now, 1)) }, // claim L, round 1, at now
		func() bool { return c.kill(now, window) })
}
