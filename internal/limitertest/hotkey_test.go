package limitertest

import (
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// keySpy admits every call and counts the calls whose key is the very string
// of its first call, the string a map that keeps the caller's key would hold.
type keySpy struct {
	first atomic.Pointer[byte]
	same  atomic.Int64
}

func (s *keySpy) Allow(key string) bool {
	p := unsafe.StringData(key)
	if !s.first.CompareAndSwap(nil, p) && s.first.Load() == p {
		s.same.Add(1)
	}
	return true
}

// TestHotKeyLimitersHoldACopyOfTheTimedKey: HotKey and HotKeyRatio give the
// limiters the hot key first as a string other than the one they time, so
// that a limiter whose map keeps the caller's string (a mutex port) does
// not find the key by its pointer alone while one that keeps a copy of its
// own (hotlimit's) compares the key's bytes.
func TestHotKeyLimitersHoldACopyOfTheTimedKey(t *testing.T) {
	for _, run := range []struct {
		name string
		f    func(*testing.B, []HotKeyPolicy)
	}{{"HotKey", HotKey}, {"HotKeyRatio", HotKeyRatio}} {
		t.Run(run.name, func(t *testing.T) {
			lockFree, mutex := &keySpy{}, &keySpy{}
			testing.Benchmark(func(b *testing.B) {
				run.f(b, []HotKeyPolicy{{
					Name:     "allow",
					Allow:    true,
					LockFree: func(testing.TB) Allower { return lockFree },
					Mutex:    func() Allower { return mutex },
				}})
			})
			assert.NotNil(t, lockFree.first.Load(), "the lock-free limiter was called")
			assert.NotNil(t, mutex.first.Load(), "the mutex port was called")
			assert.Zero(t, lockFree.same.Load(), "timed calls with the lock-free limiter's first key")
			assert.Zero(t, mutex.same.Load(), "timed calls with the mutex port's first key")
		})
	}
}

// countingAllower admits every call and counts them.
type countingAllower struct{ calls atomic.Int64 }

func (c *countingAllower) Allow(string) bool {
	c.calls.Add(1)
	return true
}

// TestHotKeyRatioProbesAtOneIteration: testing calls a benchmark function
// once with b.N = 1 before it sets GOMAXPROCS to the first -cpu value, and
// reports that call as the first run of that -cpu value whenever it lasted
// the benchtime. HotKeyRatio's full measurement (minRatioBlocks blocks)
// always lasts that long, so at b.N = 1 it makes one short block instead,
// and its measured runs are the later calls, under the GOMAXPROCS they are
// named for.
func TestHotKeyRatioProbesAtOneIteration(t *testing.T) {
	var runs []*countingAllower // the lock-free limiter of each call of the function, in order
	var ns []int
	testing.Benchmark(func(b *testing.B) {
		HotKeyRatio(b, []HotKeyPolicy{{
			Name:  "allow",
			Allow: true,
			LockFree: func(testing.TB) Allower {
				c := &countingAllower{}
				runs = append(runs, c)
				ns = append(ns, b.N)
				return c
			},
			Mutex: func() Allower { return &countingAllower{} },
		}})
	})
	if len(runs) < 2 {
		t.Fatalf("the benchmark function ran %d times, want the b.N = 1 call and a measured one", len(runs))
	}
	assert.LessOrEqual(t, runs[0].calls.Load(), int64(1+probeChunk*runtime.GOMAXPROCS(0)),
		"calls at b.N = %d: one probe block", ns[0])
	last := runs[len(runs)-1]
	assert.GreaterOrEqual(t, last.calls.Load(), int64(minRatioBlocks*ratioChunk*runtime.GOMAXPROCS(0)),
		"calls at b.N = %d: every block of the measurement", ns[len(ns)-1])
}
