package limitertest

import (
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
