package memory

import (
	"bytes"
	"math"
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
