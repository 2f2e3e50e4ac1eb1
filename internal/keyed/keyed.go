// Package keyed holds the per-key state cells of a limiter in a lock-free map,
// and evicts idle ones without losing a concurrent update.
//
// A limiter keeps one *C per key. The hot path is Get: one lock-free map load.
// A miss inserts a fresh cell (xsync's LoadOrCompute locks one bucket for the
// insertion only). Every change to a cell's state is a compare-and-swap made by
// the limiter itself; this package never reads a cell's state.
//
// Eviction uses a tombstone. Sweep asks the limiter's kill function to swap a
// reserved "dead" value into an idle cell by CAS; once dead, no CAS of a
// decision can succeed on that cell (each expects the live value it read), so an
// update that raced the sweep retries. A caller that reads the dead value calls
// Revive, which replaces the dead cell under its key with a fresh one (or
// returns the live cell another caller already put there) and carries on. The
// sweeper then deletes the key only if it still maps to the dead cell. No update
// is lost, and no caller waits for another.
//
// The map never keeps a key string it is given: it stores a copy, made on the
// insertion paths only (a miss, a revival), so the hot path copies nothing. A
// caller may therefore pass a key that aliases a buffer it reuses once the
// call returns, as package service does to build (user, api) keys without
// allocating.
package keyed

import (
	"strings"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v3"
)

// Map maps keys to cells. The zero value is not usable; call New.
type Map[C any] struct {
	cells   *xsync.MapOf[string, *C]
	newCell func() *C

	// Auto-sweep: when autoMin > 0, an insertion that brings the size to
	// nextSweep or more runs sweep, at most one at a time.
	autoMin   int
	nextSweep atomic.Int64
	sweeping  atomic.Bool
	sweep     func() int
}

// New returns an empty map whose misses insert newCell(). When autoMin > 0, an
// insertion that brings the map to autoMin keys or more calls sweep on the
// inserting goroutine; the next one waits until the size doubles from what the
// sweep left, and never below autoMin.
func New[C any](newCell func() *C, autoMin int, sweep func() int) *Map[C] {
	m := &Map[C]{
		cells:   xsync.NewMapOf[string, *C](),
		newCell: newCell,
		autoMin: autoMin,
		sweep:   sweep,
	}
	m.nextSweep.Store(int64(autoMin))
	return m
}

// Get returns key's cell, inserting a fresh one on a miss. The map keeps a
// copy of key, never key itself: see the package documentation.
func (m *Map[C]) Get(key string) *C {
	if c, ok := m.cells.Load(key); ok {
		return c
	}
	c, loaded := m.cells.LoadOrCompute(strings.Clone(key), m.newCell)
	if !loaded && m.autoMin > 0 {
		m.maybeSweep()
	}
	return c
}

// Peek returns key's cell if there is one, and never inserts.
func (m *Map[C]) Peek(key string) (*C, bool) {
	return m.cells.Load(key)
}

// Revive is called by a caller that found dead, a tombstoned cell, under key.
// It puts a fresh cell in dead's place, unless a live cell already replaced it,
// and returns the live cell.
func (m *Map[C]) Revive(key string, dead *C) *C {
	// Compute stores the key it is given, also when it replaces a value.
	c, _ := m.cells.Compute(strings.Clone(key), func(old *C, loaded bool) (*C, bool) {
		if loaded && old != dead {
			return old, false
		}
		return m.newCell(), false
	})
	return c
}

// Sweep calls kill on every cell. kill must tombstone the cell by CAS when its
// state equals a fresh cell's, and report whether it did. Each tombstoned cell
// is deleted if its key still maps to it. Sweep returns how many keys it
// deleted. It is safe to run concurrently with anything, Sweep included.
func (m *Map[C]) Sweep(kill func(*C) bool) int {
	deleted := 0
	m.cells.Range(func(key string, c *C) bool {
		if !kill(c) {
			return true
		}
		m.cells.Compute(key, func(old *C, loaded bool) (*C, bool) {
			if loaded && old == c {
				deleted++
				return nil, true
			}
			return old, !loaded
		})
		return true
	})
	return deleted
}

// Len returns the number of keys held.
func (m *Map[C]) Len() int {
	return m.cells.Size()
}

// maybeSweep runs the auto-sweep when the size reached its threshold. One
// goroutine sweeps at a time; others carry on without waiting.
func (m *Map[C]) maybeSweep() {
	if int64(m.cells.Size()) < m.nextSweep.Load() || !m.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer m.sweeping.Store(false)
	m.sweep()
	m.nextSweep.Store(int64(max(m.autoMin, 2*m.cells.Size())))
}
