package gcra_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
)

// FuzzDifferential is TestDifferential on any policy the Range accepts, not
// only the listed ones: limit, burst and window come from the fuzzer (a
// policy outside the Range is skipped), and so does the seed of the random
// sequence of clock steps (backwards ones included), calls, refunds and
// sweeps. Every Decision, Sweep count and Len must agree with the model's.
func FuzzDifferential(f *testing.F) {
	for i, cfg := range diffConfigs {
		f.Add(uint32(cfg.limit), uint32(cfg.burst), int64(cfg.window), uint64(i))
	}
	f.Add(uint32(1<<20), uint32(1<<20), int64(time.Millisecond), uint64(7))
	f.Add(uint32(3), uint32(1<<20), int64(24*time.Hour), uint64(8))
	f.Fuzz(func(t *testing.T, limit, burst uint32, window int64, seed uint64) {
		cfg := diffConfig{limit: int(limit), burst: int(burst), window: time.Duration(window)}
		c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: cfg.limit, Burst: cfg.burst, Window: cfg.window}
		if int64(cfg.limit) != int64(limit) || int64(cfg.burst) != int64(burst) || c.Validate() != nil {
			t.Skip("outside the Range")
		}
		rng := rand.New(rand.NewPCG(seed, uint64(limit)))
		r := newDiffRunOf(t, rng, cfg)
		for step := range 60 {
			r.tick(true)
			if !r.callOrRefund(t, fmt.Sprintf("step %d", step)) {
				return
			}
		}
	})
}
