// Package memory measures the heap each implementation holds per key: after
// one request from each of n keys, and after the implementation's own
// eviction of those keys once they are idle.
package memory

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/bench/internal/workload"
)

// Config is one measurement's setup.
type Config struct {
	// Keys is how many keys get one request each.
	Keys int
	// Policy is every implementation's policy. Its Window is also the idle
	// time after which keys are evicted; timer-evicting peers wait for it in
	// real time.
	Policy impl.Policy
	// TimerEvery is the eviction period given to peers that evict on their own
	// timer; it should exceed Policy.Window plus the insertion time, so that
	// no eviction runs while keys are inserted.
	TimerEvery time.Duration
}

// Row is one implementation's result. Bytes are heap bytes (runtime.MemStats
// HeapAlloc after a GC) above the baseline taken before the keys and the
// limiter were built. Each key is a string of its own, made after the
// baseline and dropped by the caller once passed to Allow, as a server's
// request keys are: an implementation that keeps the caller's string is
// charged for it, one that keeps a copy (hotlimit's clone, ulule's prefixed
// key) for the copy, so every implementation pays for its keys once.
type Row struct {
	Impl     string
	Eviction impl.Eviction
	Keys     int
	// Insert is the time taken by the n first requests.
	Insert time.Duration
	// PerKey is bytes per key with every key held and idle.
	PerKey float64
	// PerKeyEvicted is the bytes left per original key after eviction; NaN
	// when the implementation never evicts.
	PerKeyEvicted float64
	// Left is the number of keys still held after eviction; -1 when the
	// implementation does not tell.
	Left int
	// Note flags a doubtful measurement.
	Note string
}

// Measure measures im.
func Measure(im impl.Impl, cfg Config) (Row, error) {
	row := Row{Impl: im.Name, Eviction: im.Eviction, Keys: cfg.Keys, PerKeyEvicted: math.NaN(), Left: -1}

	var now atomic.Int64
	now.Store(int64(time.Hour)) // fake clock of implementations that take one
	o := impl.Options{EvictEvery: cfg.TimerEvery}
	if im.Clock {
		o.Clock = now.Load
	}
	base := LiveHeap()
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = workload.Key(i) // not workload.Keys: its cache would keep them
	}
	built := time.Now()
	inst, err := im.New(cfg.Policy, o)
	if err != nil {
		return row, err
	}
	defer inst.Close()
	for _, k := range keys {
		if !inst.Allow(k) {
			return row, fmt.Errorf("memory: impl=%s denied the first request of %s", im.Name, k)
		}
	}
	row.Insert = time.Since(built)
	keys = nil // what the limiter keeps of them is counted, the caller's slice is not
	row.PerKey = perKey(LiveHeap()-base, cfg.Keys)
	if im.Eviction == impl.EvictTimer && row.Insert+cfg.Policy.Window >= cfg.TimerEvery {
		row.Note = "insertion outlasted the eviction period: eviction may have run during it"
	}

	switch im.Eviction {
	case impl.EvictSweep, impl.EvictJanitor:
		now.Add(int64(2 * cfg.Policy.Window))
		inst.Sweep()
	case impl.EvictTimer:
		// Keys are idle for a Window from the end of insertion; the first
		// eviction after that removes them. Wait for two periods past it.
		time.Sleep(time.Until(built.Add(row.Insert + cfg.Policy.Window + 2*cfg.TimerEvery)))
	case impl.EvictNone:
		runtime.KeepAlive(inst)
		return row, nil
	}
	row.PerKeyEvicted = perKey(LiveHeap()-base, cfg.Keys)
	if inst.Len != nil {
		row.Left = inst.Len()
	}
	runtime.KeepAlive(inst)
	return row, nil
}

// LiveHeap returns the live heap after a full collection.
func LiveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // a second cycle frees what finalizers of the first released
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func perKey(bytes int64, keys int) float64 { return float64(bytes) / float64(keys) }

// Print writes rows as an aligned table.
func Print(w io.Writer, cfg Config, rows []Row) error {
	fmt.Fprintf(w, "memory: %d keys, one request each, policy %v; bytes are heap bytes per key (HeapAlloc after GC, the key strings each one keeps included)\n", cfg.Keys, cfg.Policy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tB/key idle\tB/key after eviction\tkeys left\teviction\tinsert\t")
	for _, r := range rows {
		evicted, left := "n/a", "?"
		if !math.IsNaN(r.PerKeyEvicted) {
			evicted = fmt.Sprintf("%.1f", r.PerKeyEvicted)
		}
		if r.Left >= 0 {
			left = fmt.Sprint(r.Left)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%v\t%s\n", r.Impl, r.PerKey, evicted, left, r.Eviction,
			r.Insert.Round(time.Millisecond), r.Note)
	}
	return tw.Flush()
}

// PrintBench writes rows as `go test -bench` result lines, one per
// implementation: BenchmarkMemory/impl=NAME, 1 iteration, B/key (idle),
// B/key-evicted (omitted when the implementation never evicts) and keys.
func PrintBench(w io.Writer, rows []Row) error {
	for _, r := range rows {
		line := fmt.Sprintf("BenchmarkMemory/impl=%s\t1\t%.1f B/key", r.Impl, r.PerKey)
		if !math.IsNaN(r.PerKeyEvicted) {
			line += fmt.Sprintf("\t%.1f B/key-evicted", r.PerKeyEvicted)
		}
		line += fmt.Sprintf("\t%d keys\n", r.Keys)
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	return nil
}
