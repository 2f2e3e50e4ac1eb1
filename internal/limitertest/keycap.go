package limitertest

import (
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// FloodCap returns the key cap KeyCapFlood expects its limiter to be built
// with: pass hotlimit.WithMaxKeys(FloodCap()) to Adapt. It is 100,000, or
// 10,000 under the race detector, which makes every map operation ten times
// slower.
func FloodCap() int {
	if raceEnabled {
		return 10_000
	}
	return 100_000
}

// KeyCapFlood streams distinct keys, one request each, through a limiter of
// limit per window capped at FloodCap() keys: a hundred times the cap, or
// ten times with -short or -race. The clock moves so that a quarter of the
// cap in flood keys arrive per window, except in one phase of a cap's worth of
// keys out of four, when it stands still and the cap fills with keys that are
// not idle. Every 64 flood keys, 16 hot keys each make a request, compared with newModel's decision at the same time. It
// asserts that the keys held never exceed the cap, that the hot keys decide
// exactly as the model (a hot key is never idle, so the cap never turns it
// away, and no key passes more than its limit allows), that the cap turned
// flood keys away in the frozen phases with the documented Decision, and
// that the heap, after a collection, grows by at most bytesPerKey per key of
// the cap while ten (or one) hundred times more keys went through.
func KeyCapFlood(t *testing.T, newLimiter Constructor, newModel func(epoch int64) Model, limit int, window time.Duration, bytesPerKey uint64) {
	capKeys := FloodCap()
	flood := 100 * capKeys
	if testing.Short() || raceEnabled {
		flood = 10 * capKeys
	}
	const (
		hotKeys = 16
		every   = 64 // flood keys between two rounds of hot requests
	)
	phase := capKeys                                 // flood keys per phase: a frozen one fills the cap
	step := int64(window) / int64(capKeys/4) * every // per round: capKeys/4 flood keys per window
	require.Positive(t, step)

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc

	now := int64(time.Hour)
	lim, err := newLimiter(limit, window, func() int64 { return now })
	require.NoError(t, err)
	model := newModel(now)
	hot := make([]string, hotKeys)
	for i := range hot {
		hot[i] = "hot-" + strconv.Itoa(i)
	}
	var admitted, denied, hotPassed int
	var peak uint64
	checkHeap := func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
	}
	for i := range flood {
		frozen := i/phase%4 == 3
		if i%every == 0 {
			if !frozen {
				now += step
			}
			for _, k := range hot {
				want := model(k, 1, now).Allowed
				got := lim.Allow(k)
				require.Equal(t, want, got, "flood key %d, hot key %s at %v: the model's decision", i, k, time.Duration(now))
				if got {
					hotPassed++
				}
			}
			require.LessOrEqual(t, lim.Len(), capKeys, "flood key %d: keys held", i)
		}
		key := "flood-" + strconv.Itoa(i)
		if lim.Allow(key) {
			admitted++
			continue
		}
		if denied++; denied == 1 {
			d := lim.Take(key+"-take", 1)
			assert.Equal(t, hotlimit.Decision{Limit: limit, RetryAfter: d.RetryAfter, ResetAfter: d.RetryAfter}, d, "the decision for a new key at the cap: whole once there is room")
			assert.Positive(t, d.RetryAfter)
			assert.LessOrEqual(t, d.RetryAfter, 2*window)
		}
		if i%(flood/8) == 0 {
			checkHeap()
		}
	}
	checkHeap()
	runtime.KeepAlive(lim)
	t.Logf("flood %d: admitted %d, denied %d, held %d, hot passes %d; heap growth at most %d B, %d B per key of the cap",
		flood, admitted, denied, lim.Len(), hotPassed, peak, peak/uint64(capKeys))
	assert.LessOrEqual(t, lim.Len(), capKeys)
	assert.Positive(t, denied, "the frozen phases filled the cap")
	assert.Greater(t, admitted, flood/2, "idle keys made room while the clock moved")
	assert.Positive(t, hotPassed)
	assert.LessOrEqual(t, peak, bytesPerKey*uint64(capKeys), "heap growth bounded by the cap")
}

// CappedNeverPastTheClocksEnd checks the key cap's refusal at the end of the
// clock: a new key that hotlimit.WithMaxKeys turns away waits for a held key
// to go idle, and when the held key's requests count only until after the
// clock's last reading (math.MaxInt64), or after the limiter's time stops,
// that never happens. The refusal must then say Never, as the held key's
// ResetAfter does, not a wait the clock cannot reach. newLimiter must build
// a limiter capped at one key (pass hotlimit.WithMaxKeys(1) to Adapt); it is
// built at two epochs, near the clock's end and at 0, and asked 1 ms before
// the clock's end.
func CappedNeverPastTheClocksEnd(t *testing.T, newLimiter Constructor) {
	for _, epoch := range []int64{math.MaxInt64 - int64(time.Millisecond), 0} {
		var now atomic.Int64
		now.Store(epoch)
		lim, err := newLimiter(5, time.Second, now.Load)
		require.NoError(t, err)
		now.Store(math.MaxInt64 - int64(time.Millisecond))
		held := lim.Take("a", 1)
		require.True(t, held.Allowed)
		require.Equal(t, hotlimit.Never, held.ResetAfter, "epoch %d: the held key never resets", epoch)
		d := lim.Take("b", 1)
		assert.False(t, d.Allowed, "epoch %d: the cap turns the new key away", epoch)
		assert.Equal(t, hotlimit.Never, d.RetryAfter, "epoch %d: no held key goes idle before the clock's end", epoch)
		assert.False(t, lim.Allow("b"), "epoch %d", epoch)
	}
}

// CappedFromAClockBehindTheEpoch checks, for a bucket (a token bucket or
// GCRA: neither refills while the clock is behind its epoch), that the key
// cap's refusal counts from the clock reading: at 5 per second, a key
// drained 3 s behind the epoch is full again 3 s + 1 s later, and a new key
// turned away is told to wait that long, as the held key's own ResetAfter
// says, not the 1 s a drained key takes to fill. newLimiter must build a
// limiter capped at one key (pass hotlimit.WithMaxKeys(1) to Adapt).
func CappedFromAClockBehindTheEpoch(t *testing.T, newLimiter Constructor) {
	var now atomic.Int64
	now.Store(int64(10 * time.Second))
	lim, err := newLimiter(5, time.Second, now.Load)
	require.NoError(t, err)
	now.Store(int64(7 * time.Second)) // 3 s behind the epoch
	held := lim.Take("a", 5)
	require.True(t, held.Allowed)
	require.Equal(t, 4*time.Second, held.ResetAfter, "the held key is full 3 s + 1 s later")
	d := lim.Take("b", 1)
	assert.False(t, d.Allowed, "the cap turns the new key away")
	assert.Equal(t, 4*time.Second, d.RetryAfter, "the held key goes idle 3 s + 1 s later")
}
