package memory

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
)

// TestMeasure runs the measurement small: every implementation holds some
// bytes per key, and those that evict on demand keep no key afterwards.
func TestMeasure(t *testing.T) {
	cfg := Config{Keys: 20_000, Policy: impl.Policy{Limit: 100, Window: 20 * time.Millisecond}, TimerEvery: 300 * time.Millisecond}
	var rows []Row
	for _, im := range impl.All() {
		r, err := Measure(im, cfg)
		require.NoError(t, err, im.Name)
		rows = append(rows, r)
		assert.Positive(t, r.PerKey, im.Name)
		switch im.Eviction {
		case impl.EvictNone:
			assert.True(t, math.IsNaN(r.PerKeyEvicted), im.Name)
		case impl.EvictSweep, impl.EvictJanitor:
			assert.Zero(t, r.Left, "%s keeps keys after eviction", im.Name)
			assert.Less(t, r.PerKeyEvicted, r.PerKey, im.Name)
		case impl.EvictTimer:
			assert.Less(t, r.PerKeyEvicted, r.PerKey, im.Name)
		}
	}
	var out bytes.Buffer
	require.NoError(t, Print(&out, cfg, rows))
	t.Log("\n" + out.String())
	assert.Contains(t, out.String(), "mutex")
}

// TestPrintBench checks the go test -bench lines cmd/summary reads.
func TestPrintBench(t *testing.T) {
	rows := []Row{
		{Impl: "tokenbucket", Keys: 1000, PerKey: 66.04, PerKeyEvicted: 0.5},
		{Impl: "xtime", Keys: 1000, PerKey: 138, PerKeyEvicted: math.NaN()},
	}
	var out bytes.Buffer
	require.NoError(t, PrintBench(&out, rows))
	assert.Equal(t, "BenchmarkMemory/impl=tokenbucket\t1\t66.0 B/key\t0.5 B/key-evicted\t1000 keys\n"+
		"BenchmarkMemory/impl=xtime\t1\t138.0 B/key\t1000 keys\n", out.String())
}

// keySet is a limiter that only remembers its keys: the caller's strings, or
// copies of them.
type keySet struct {
	keys  map[string]struct{}
	clone bool
}

func (s *keySet) Allow(key string) bool {
	if s.clone {
		key = strings.Clone(key)
	}
	s.keys[key] = struct{}{}
	return true
}

func keySetImpl(name string, clone bool) impl.Impl {
	return impl.Impl{Name: name, Eviction: impl.EvictNone, New: func(impl.Policy, impl.Options) (*impl.Instance, error) {
		s := &keySet{keys: map[string]struct{}{}, clone: clone}
		return &impl.Instance{Limiter: s, Close: func() {}}, nil
	}}
}

// TestMeasureChargesEveryKeyOnce: an implementation that keeps the caller's
// key strings and one that keeps copies of them hold the same bytes per key,
// so neither is charged for its keys while the other is not.
func TestMeasureChargesEveryKeyOnce(t *testing.T) {
	cfg := Config{Keys: 20_000, Policy: impl.Policy{Limit: 1, Window: time.Hour}}
	keeps, err := Measure(keySetImpl("keeps", false), cfg)
	require.NoError(t, err)
	copies, err := Measure(keySetImpl("copies", true), cfg)
	require.NoError(t, err)
	// "user-0000042" is 12 bytes, a 16-byte object: a difference of 16
	// bytes per key is one side's strings counted and the other's not.
	assert.InDelta(t, copies.PerKey, keeps.PerKey, 2, "bytes per key: keeps the caller's strings %.1f, keeps copies %.1f",
		keeps.PerKey, copies.PerKey)
	assert.Greater(t, keeps.PerKey, 16.0, "the strings kept are counted")
}
