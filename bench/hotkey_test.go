package bench

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/internal/keyed"
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

// BenchmarkHotKeyBound times, as BenchmarkHotKeyRatio does, against the same
// mutex port at hit=allow, the least that a lock-free admission on one hot
// key writes, with no decision: a map load, a clock read and a CAS loop on
// the key's word (impl=onecas, every one-word algorithm's write), and the
// same with a second word on a line of its own (impl=twocas, the sliding
// log's head and ring slot). Their ratios bound the algorithms' from below:
// a contended line changes cores on every admission, where the mutex port
// lets one goroutine run while the others park.
func BenchmarkHotKeyBound(b *testing.B) {
	mutex := impl.Mutex()
	for _, lines := range []int{1, 2} {
		name := map[int]string{1: "onecas", 2: "twocas"}[lines]
		b.Run("impl="+name, func(b *testing.B) {
			limitertest.HotKeyRatio(b, []limitertest.HotKeyPolicy{{
				Name:     "allow",
				Allow:    true,
				LockFree: func(testing.TB) limitertest.Allower { return newBareCAS(lines) },
				Mutex: func() limitertest.Allower {
					inst, err := mutex.New(hotAllow, impl.Options{})
					require.NoError(b, err)
					b.Cleanup(inst.Close)
					return inst.Limiter
				},
			}})
		})
	}
}

// bareCAS admits every call, writing the clock reading into each of its
// words by CAS: the writes of an admission without its decision. Its words
// are in the limiters' own map, looked up as a limiter's Allow looks up its
// cell.
type bareCAS struct {
	cells *keyed.Map[bareWords]
	lines int
}

// bareWords are a key's words, each on a cache line of its own.
type bareWords struct {
	w [2]struct {
		atomic.Int64
		_ [56]byte
	}
}

func newBareCAS(lines int) *bareCAS {
	return &bareCAS{cells: keyed.New[bareWords](nil, nil, hotlimit.Options{}), lines: lines}
}

func (c *bareCAS) Allow(key string) bool {
	ws := c.cells.Load(key)
	if ws == nil {
		ws = c.cells.Get(key) // a miss: insert (no key cap, so never nil)
	}
	now := hotlimit.Monotonic()
	for i := range c.lines {
		w := &ws.w[i].Int64
		// Invariant: a word only grows. The CAS stores max(old, now) only
		// if the word still holds old; a concurrent writer that moved it
		// fails this CAS, and the loop reads the word again.
		for old := w.Load(); !w.CompareAndSwap(old, max(old, now)); old = w.Load() {
		}
	}
	return true
}
