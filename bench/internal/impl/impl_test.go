package impl

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryImplEnforcesThePolicy: a fresh key passes Limit calls then is
// denied, and keys are independent.
func TestEveryImplEnforcesThePolicy(t *testing.T) {
	names := map[string]bool{}
	for _, im := range All() {
		require.False(t, names[im.Name], "duplicate name %s", im.Name)
		names[im.Name] = true
		got, ok := ByName(im.Name)
		require.True(t, ok)
		assert.Equal(t, im.Name, got.Name)

		var now atomic.Int64
		o := Options{}
		if im.Clock {
			o.Clock = now.Load
		}
		inst, err := im.New(Policy{Limit: 3, Window: time.Hour}, o)
		require.NoError(t, err, im.Name)
		for _, key := range []string{"a", "b"} {
			for i := range 3 {
				assert.True(t, inst.Allow(key), "%s: key %s call %d", im.Name, key, i)
			}
			assert.False(t, inst.Allow(key), "%s: key %s over the limit", im.Name, key)
		}
		if inst.Len != nil {
			assert.Equal(t, 2, inst.Len(), im.Name)
		}
		inst.Close()

		_, err = im.New(Policy{Limit: 0, Window: time.Second}, Options{})
		assert.Error(t, err, "%s: limit 0", im.Name)
	}
	_, ok := ByName("nope")
	assert.False(t, ok)
}

// TestMutexRefillsAndSweeps pins the baseline's model: continuous refill,
// a full bucket is swept, a partial one is kept.
func TestMutexRefillsAndSweeps(t *testing.T) {
	var now atomic.Int64
	inst, err := Mutex().New(Policy{Limit: 2, Window: time.Second}, Options{Clock: now.Load})
	require.NoError(t, err)
	for i, step := range []struct {
		advance time.Duration
		want    bool
	}{
		{0, true}, {0, true}, {0, false},
		{499 * time.Millisecond, false}, // 0.998 token
		{time.Millisecond, true},        // exactly 1
		{0, false},
	} {
		now.Add(int64(step.advance))
		assert.Equal(t, step.want, inst.Allow("k"), "step %d", i)
	}
	require.True(t, inst.Allow("other"))
	now.Add(int64(600 * time.Millisecond)) // "k" has 1.2 tokens, "other" is full
	inst.Sweep()
	assert.Equal(t, 1, inst.Len())
	now.Add(int64(time.Second))
	inst.Sweep()
	assert.Zero(t, inst.Len())
}

// TestMutexSweepLosesNoAdmission: with a frozen clock, sweeps racing the
// hammer never give a key a second quota.
func TestMutexSweepLosesNoAdmission(t *testing.T) {
	frozen := func() int64 { return 1 }
	inst, err := Mutex().New(Policy{Limit: 7, Window: time.Hour}, Options{Clock: frozen})
	require.NoError(t, err)
	var passed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				inst.Sweep()
			}
		}
	}()
	for range 16 {
		wg.Go(func() {
			for range 500 {
				if inst.Allow("k") {
					passed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	assert.EqualValues(t, 7, passed.Load())
}
