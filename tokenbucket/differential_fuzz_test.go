package tokenbucket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
)

// FuzzDifferential is TestDifferential on any policy the Range accepts, not
// only the listed ones: limit, burst and window come from the fuzzer (a
// policy outside the Range is skipped), and so do the clock's grid (a
// millisecond or a nanosecond) and the seed of the random sequence of clock
// steps, calls and sweeps. The twin checks every call against the exact
// model: field by field where the limiter's fixed point is exact, and
// within the documented band where it is not.
func FuzzDifferential(f *testing.F) {
	for i, cfg := range diffConfigs {
		f.Add(uint32(cfg.limit), uint32(cfg.burst), int64(cfg.window), i%2 == 0, uint64(i))
	}
	f.Add(uint32(1<<20), uint32(1), int64(time.Millisecond), false, uint64(7))
	f.Add(uint32(7), uint32(1<<20), int64(24*time.Hour), true, uint64(8))
	f.Fuzz(func(t *testing.T, limit, burst uint32, window int64, ms bool, seed uint64) {
		c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: int(limit), Burst: int(burst), Window: time.Duration(window)}
		if int64(c.Limit) != int64(limit) || int64(c.Burst) != int64(burst) || c.Validate() != nil {
			t.Skip("outside the Range")
		}
		grid := time.Nanosecond
		if ms {
			grid = time.Millisecond
		}
		r := rand.New(rand.NewPCG(seed, uint64(limit)))
		b := burstOf(c.Limit, c.Burst)
		epoch := r.Int64N(2e15) - 1e15
		tw := newBurstTwin(t, c.Limit, b, c.Window, epoch, grid)
		limitT := tw.lim.soft / 2 // inside the wrap guard's soft span, as in TestDifferential
		keys := []string{"a", "b", "c"}
		hi := int64(0) // the latest time the limiter has read, since the epoch
		for i := range 80 {
			step := randomStep(r, c.Limit, c.Window, grid)
			if tw.now.Load()+int64(step)-epoch > limitT {
				break
			}
			tw.now.Add(int64(step))
			hi = max(hi, tw.now.Load()-epoch)
			msg := fmt.Sprintf("%v step %d at %d", tw, i, tw.now.Load()-epoch)
			if r.IntN(30) == 0 {
				tw.sweep(msg)
				continue
			}
			key, n, allow, probe := keys[r.IntN(len(keys))], randomN(r, b), r.IntN(2) == 0, r.IntN(4) == 0
			// A probe moves the clock up to a fill ahead and back: it must
			// not reach soft, where a sweep would start on a goroutine of
			// its own, unseen by the model (and then see the clock step
			// back behind it, which only a test clock does). A wait counts
			// from the later of the limiter's time and the key's timestamp:
			// from the epoch for a clock behind it, and from a reading made
			// before the clock stepped back; both are at most hi.
			probe = probe && hi+tw.lim.fill < tw.lim.soft
			tw.take(key, n, allow, probe, msg)
			if t.Failed() {
				return
			}
		}
	})
}
