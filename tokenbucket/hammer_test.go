package tokenbucket

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestFrozenClockHammer: with the clock frozen, many goroutines calling far
// more than Limit times get exactly Limit admissions per key, with or without
// a goroutine sweeping in a loop (a racing Sweep must neither lose an
// admission nor make one twice). Mixes Allow and Take(key, 1).
func TestFrozenClockHammer(t *testing.T) {
	const goroutines = 32
	for _, limit := range []int{1, 2, 7, 100, 1000} {
		for _, sweeper := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/sweeper=%t", limit, sweeper), func(t *testing.T) {
				lim, err := New(limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
				require.NoError(t, err)
				keys := []string{"x", "y"}
				perG := max(20*limit, 20000) / goroutines
				var passed [2]atomic.Int64
				var stop atomic.Bool
				var sweeps sync.WaitGroup
				if sweeper {
					sweeps.Go(func() {
						for !stop.Load() {
							lim.Sweep()
							runtime.Gosched()
						}
					})
				}
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range goroutines {
					wg.Go(func() {
						<-start
						for i := range perG {
							k := (g + i) % len(keys)
							ok := false
							if i%2 == 0 {
								ok = lim.Allow(keys[k])
							} else {
								ok = lim.Take(keys[k], 1).Allowed
							}
							if ok {
								passed[k].Add(1)
							}
						}
					})
				}
				close(start)
				wg.Wait()
				stop.Store(true)
				sweeps.Wait()
				for k := range keys {
					assert.EqualValues(t, limit, passed[k].Load(), "key %q: %d calls", keys[k], goroutines*perG/2)
					assert.Zero(t, lim.Take(keys[k], 0).Remaining)
				}
			})
		}
	}
}

// TestPhasedHammer moves a fake clock between barriers; in each phase all
// goroutines hammer one key with Take(n) of every size, then drain it, so
// the phase ends with less than a token. The tokens taken in a phase must be
// exactly those the model holds at the phase's time (millisecond clock steps:
// an exact twin). Some configurations jump by several Ranges between phases,
// so that several goroutines sweep at once before reading; one runs a
// goroutine sweeping in a loop besides.
func TestPhasedHammer(t *testing.T) {
	phases, goroutines := 200, 8
	if testing.Short() {
		phases = 30
	}
	for ci, cfg := range []struct {
		limit   int
		window  time.Duration
		jumps   bool
		sweeper bool
	}{
		{7, 10 * time.Millisecond, false, false},
		{5, time.Second, false, true},
		{100, time.Minute, false, false},
		{1 << 16, time.Millisecond, true, false},
		{1 << 20, time.Millisecond, true, true},
	} {
		t.Run(fmt.Sprintf("limit=%d/window=%v/jumps=%t/sweeper=%t", cfg.limit, cfg.window, cfg.jumps, cfg.sweeper), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 11))
			tw := newTwin(t, cfg.limit, cfg.window, r.Int64N(1e15), time.Millisecond)
			require.True(t, tw.exact)
			lim, m := tw.lim, tw.m
			var stop atomic.Bool
			var sweeps sync.WaitGroup
			if cfg.sweeper {
				sweeps.Go(func() {
					for !stop.Load() {
						lim.Sweep()
						runtime.Gosched()
					}
				})
			}
			tok := int64(cfg.window) / int64(cfg.limit)
			for phase := range phases {
				var step int64
				switch q := r.IntN(10); {
				case q < 2:
				case q < 7:
					step = r.Int64N(3 * max(tok, int64(time.Millisecond)))
				case q < 9 || !cfg.jumps:
					step = r.Int64N(2 * int64(cfg.window))
				default:
					step = int64(1+r.IntN(3))*int64(lim.b.Range()) + r.Int64N(int64(cfg.window))
				}
				now := tw.now.Add(step / int64(time.Millisecond) * int64(time.Millisecond))
				mt, _ := m.at(now)
				want := floorRat(m.tokens("k", mt))

				var taken atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range goroutines {
					wg.Go(func() {
						gr := rand.New(rand.NewPCG(uint64(phase), uint64(g)))
						<-start
						for range 20 {
							if n := 1 + gr.IntN(cfg.limit); lim.Take("k", n).Allowed {
								taken.Add(int64(n))
							}
						}
						// Drain: halving sizes, each until denied.
						for n := cfg.limit; n >= 1; n /= 2 {
							for lim.Take("k", n).Allowed {
								taken.Add(int64(n))
							}
						}
					})
				}
				close(start)
				wg.Wait()
				assert.Equal(t, want, taken.Load(), "phase %d at %v", phase, time.Duration(mt))
				if want > 0 {
					m.take("k", mt, want)
				}
				tw.checkState("k", fmt.Sprintf("phase %d", phase))
				if t.Failed() {
					break
				}
			}
			stop.Store(true)
			sweeps.Wait()
			if cfg.jumps {
				assert.Positive(t, lim.swept.Load(), "the jumps made the guard sweep")
			}
		})
	}
}
