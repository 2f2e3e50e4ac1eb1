package tokenbucket

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestIdleKeysAreFullWhateverTheStalls plays random calls on thirty keys,
// with auto-sweep steps and a key cap, where a Take may stall at its first
// clock reading (its insertion's step, or its own) while other calls land,
// the clock moves on by fractions of Range or jumps by more than the guard's
// hard span, and Sweep and refunds run, nested up to three deep. However
// the calls interleave, a key idle for its fill time is full: no stored
// timestamp outlives the wrap guard's bounds, to be misread later.
func TestIdleKeysAreFullWhateverTheStalls(t *testing.T) {
	seqs := 20000
	if testing.Short() {
		seqs = 3000
	}
	cfgs := []struct {
		limit  int
		window time.Duration
	}{{1, time.Second}, {1 << 20, time.Millisecond}, {3, 7 * time.Millisecond}}
	stalls := 0
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 99))
		var clock limitertest.HookClock
		opts := []hotlimit.Option{hotlimit.WithClock(clock.Read), hotlimit.WithAutoSweep(1 + rng.IntN(3))}
		if rng.IntN(2) == 0 {
			opts = append(opts, hotlimit.WithMaxKeys(3+rng.IntN(5)))
		}
		cfg := cfgs[rng.IntN(len(cfgs))]
		lim, err := New(cfg.limit, cfg.window, opts...)
		require.NoError(t, err)
		// No sweep in the background: it would read the clock, and run
		// the hook, on a goroutine of its own. Callers past the hard span
		// still sweep on their own.
		lim.sweeping.Store(true)
		rng0 := int64(lim.b.Range())
		clock.Now.Store(rng.Int64N(1 << 40))
		key := func() string { return "k" + strconv.Itoa(rng.IntN(30)) }
		depth := 0
		var call func()
		call = func() {
			switch rng.IntN(10) {
			case 0:
				clock.Now.Add(rng.Int64N(rng0/3 + 1))
			case 1:
				clock.Now.Add(rng0/2 + rng.Int64N(2*rng0)) // past the hard span
			case 2:
				lim.Sweep()
			case 3:
				_, rc := lim.TakeReceipt(key(), 1+rng.IntN(lim.burst))
				lim.Refund(key(), rc)
			default:
				if depth < 3 && rng.IntN(3) == 0 {
					depth++
					stalls++
					clock.Hook = func() { // the Take's first reading
						for range 1 + rng.IntN(4) {
							call()
						}
					}
					lim.Take(key(), 1+rng.IntN(lim.burst))
					depth--
				} else {
					lim.Allow(key())
				}
			}
		}
		for range 60 {
			call()
		}
		clock.Hook = nil
		clock.Now.Add(lim.fill)
		for i := range 30 {
			k := "k" + strconv.Itoa(i)
			d := lim.Take(k, 0)
			if !assert.Equal(t, lim.burst, d.Remaining, "seq %d: %s, idle for its fill time %v: %+v", seq, k, time.Duration(lim.fill), d) {
				return
			}
		}
	}
	assert.Positive(t, stalls)
}
