package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// BenchmarkHotKeyRatio times each of hotlimit's limiters (impl=coarse aside)
// against the mutex port (impl=mutex) on one hot key, parallel, with the
// policies of BenchmarkAllow's keys=1 rows (hit=allow: 65536 per 1 ms;
// hit=deny: 1 per hour, spent before timing), in alternating blocks within
// one benchmark, and reports the median of the per-block ratios
// (lockfree/mutex) and each one's median wall time per call (see
// limitertest.HotKeyRatio). BenchmarkAllow times the two in separate
// benchmarks, seconds apart, so that on a shared machine its ratios also
// measure how the load changed in between; here both halves of a block see
// the same load. Names: HotKeyRatio/impl=<name>/hit=<allow|deny>.
func BenchmarkHotKeyRatio(b *testing.B) {
	mutex := impl.Mutex()
	for _, im := range impl.All() {
		if !im.Hotlimit || im.Name == "coarse" {
			continue
		}
		b.Run("impl="+im.Name, func(b *testing.B) {
			limitertest.HotKeyRatio(b, []limitertest.HotKeyPolicy{
				hotKeyPolicy(b, "allow", true, im, mutex, hotAllow),
				hotKeyPolicy(b, "deny", false, im, mutex, deny),
			})
		})
	}
}

// hotKeyPolicy is the hot-key policy p of im against the mutex port.
func hotKeyPolicy(b *testing.B, name string, allow bool, im, mutex impl.Impl, p impl.Policy) limitertest.HotKeyPolicy {
	build := func(tb testing.TB, im impl.Impl) limitertest.Allower {
		inst, err := im.New(p, impl.Options{})
		require.NoError(tb, err, "impl=%s", im.Name)
		tb.Cleanup(inst.Close)
		return inst.Limiter
	}
	return limitertest.HotKeyPolicy{
		Name:     name,
		Allow:    allow,
		LockFree: func(tb testing.TB) limitertest.Allower { return build(tb, im) },
		Mutex:    func() limitertest.Allower { return build(b, mutex) },
	}
}
