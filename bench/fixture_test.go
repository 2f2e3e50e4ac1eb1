package bench

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/bench/internal/workload"
)

// keySpy is a limiter (the mutex port) that records the string data of every
// key it is given: the first call of a key is the one whose string a map
// keeps.
type keySpy struct {
	impl.Limiter
	mu   sync.Mutex
	seen map[*byte]bool
}

func (s *keySpy) Allow(key string) bool {
	s.mu.Lock()
	s.seen[unsafe.StringData(key)] = true
	s.mu.Unlock()
	return s.Limiter.Allow(key)
}

// TestFixtureLimitersHoldCopiesOfTheTimedKeys: no fixture gives a limiter the
// string objects that the timed loop then passes, so that no limiter's map
// finds a key by its pointer alone. A map that keeps the caller's string
// (the mutex port, x/time/rate, go-limiter, throttled) would otherwise skip
// comparing the key's bytes, which hotlimit (it keeps a copy of its own),
// ulule (it keeps a prefixed copy) and every server (each request brings a
// new string) do not skip.
func TestFixtureLimitersHoldCopiesOfTheTimedKeys(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.String(), func(t *testing.T) {
			if testing.Short() && sc.keys > 1 {
				t.Skip("100k keys: not under -short")
			}
			var spy *keySpy
			mutex := impl.Mutex()
			im := impl.Impl{Name: "spy", Hotlimit: true, New: func(p impl.Policy, o impl.Options) (*impl.Instance, error) {
				inst, err := mutex.New(p, o)
				if err != nil {
					return nil, err
				}
				spy = &keySpy{Limiter: inst.Limiter, seen: map[*byte]bool{}}
				inst.Limiter = spy
				return inst, nil
			}}
			fx := newFixture(t, im, sc)
			defer fx.inst.Close()
			require.NotEmpty(t, spy.seen, "the fixture calls the limiter")
			for _, k := range fx.keys {
				if spy.seen[unsafe.StringData(k)] {
					t.Fatalf("the fixture gave the limiter the timed loop's own string %q", k)
				}
			}
		})
	}
}

// TestTableCeilingProbesAtOneIteration: BenchmarkTableCeiling's call with
// b.N = 1, which testing makes before it sets GOMAXPROCS to the first -cpu
// value and reports when it lasted the benchtime, is one short block, so that
// the runs reported are timed under the GOMAXPROCS they are named for (see
// limitertest.HotKeyRatio).
func TestTableCeilingProbesAtOneIteration(t *testing.T) {
	if testing.Short() {
		t.Skip("100k keys per call of the benchmark: not under -short")
	}
	tableRuns = nil
	testing.Benchmark(BenchmarkTableCeiling)
	require.GreaterOrEqual(t, len(tableRuns), 2, "the b.N = 1 call and a measured one")
	require.Equal(t, 1, tableRuns[0].n)
	procs := runtime.GOMAXPROCS(0)
	assert.LessOrEqual(t, tableRuns[0].calls, int64(tableProbeChunk*procs*4), "calls at b.N = 1: one probe block")
	last := tableRuns[len(tableRuns)-1]
	assert.GreaterOrEqual(t, last.calls, int64(tableMinBlocks*tableChunk*procs*4), "calls at b.N = %d: every block", last.n)
}

// firstCallSpy wraps a limiter and records the string data of the first
// call of each key, the string a map that keeps the caller's string holds.
type firstCallSpy struct {
	impl.Limiter
	mu     sync.Mutex
	seen   map[string]bool
	firsts map[*byte]bool
}

func (s *firstCallSpy) Allow(key string) bool {
	s.mu.Lock()
	if !s.seen[key] {
		s.seen[key] = true
		s.firsts[unsafe.StringData(key)] = true
	}
	s.mu.Unlock()
	return s.Limiter.Allow(key)
}

// TestTableCeilingGoLimiterHoldsCopiesOfTheTimedKeys: BenchmarkTableCeiling
// makes go-limiter's first call of each key with a copy of the string it then
// times, as newFixture does, so that its lookups compare the key's bytes as
// the tokenbucket's and the tables' do.
func TestTableCeilingGoLimiterHoldsCopiesOfTheTimedKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("100k keys per call of the benchmark: not under -short")
	}
	var spies []*firstCallSpy
	golimiter := tableGoLimiter
	t.Cleanup(func() { tableGoLimiter = golimiter })
	tableGoLimiter = impl.Impl{Name: "spy", New: func(p impl.Policy, o impl.Options) (*impl.Instance, error) {
		inst, err := golimiter.New(p, o)
		if err != nil {
			return nil, err
		}
		spy := &firstCallSpy{Limiter: inst.Limiter, seen: map[string]bool{}, firsts: map[*byte]bool{}}
		spies = append(spies, spy)
		inst.Limiter = spy
		return inst, nil
	}}
	testing.Benchmark(BenchmarkTableCeiling)
	require.NotEmpty(t, spies)
	for _, spy := range spies {
		require.Len(t, spy.seen, manyKeys)
		for _, k := range workload.Keys(manyKeys) {
			if spy.firsts[unsafe.StringData(k)] {
				t.Fatalf("go-limiter's first call of %q was with the string the benchmark times", k)
			}
		}
	}
}

// TestEveryImplHoldsTheFixtureKeys: BenchmarkAllow times Allow on existing
// keys, so no implementation may evict a key of its fixture by itself
// before the timed calls come to it. On the real clock a key of 100 per 1 ms
// is idle 10 µs after its one request, well before the fixture's 100,000th
// key: the fixture's keys are inserted here one per millisecond of a fake
// clock, and every implementation that takes a clock and tells its keys
// must then hold them all (go-limiter and ulule evict only on a timer that
// the benchmarks' runs never reach, throttled never).
func TestEveryImplHoldsTheFixtureKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("100k keys: not under -short")
	}
	keys := workload.Keys(manyKeys)
	for _, im := range impl.All() {
		if !im.Clock {
			continue
		}
		t.Run("impl="+im.Name, func(t *testing.T) {
			var now atomic.Int64
			inst, err := im.New(manyAllow, impl.Options{Clock: now.Load})
			require.NoError(t, err)
			defer inst.Close()
			if inst.Len == nil {
				t.Skipf("impl=%s does not tell the keys it holds (it never evicts)", im.Name)
			}
			for _, k := range keys {
				now.Add(int64(manyAllow.Window))
				require.True(t, inst.Allow(strings.Clone(k)))
			}
			assert.Equal(t, len(keys), inst.Len(), "impl=%s holds every key of the fixture", im.Name)
		})
	}
}
