package keyed_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/keyed"
)

// cell is a test cell: a count changed by CAS, with dead as its tombstone.
type cell struct{ n atomic.Int64 }

const dead = -1

func newCell() *cell { return new(cell) }

// kill tombstones an idle (zero) cell.
func kill(c *cell) bool { return c.n.CompareAndSwap(0, dead) }

// add changes key's count by d the way a limiter does: CAS on the cell,
// reviving it when it is dead. It returns the cell it changed.
func add(m *keyed.Map[cell], key string, c *cell, d int64) *cell {
	for {
		v := c.n.Load()
		if v == dead {
			c = m.Revive(key, c)
			continue
		}
		if c.n.CompareAndSwap(v, v+d) {
			return c
		}
	}
}

func TestGetInsertsOnce(t *testing.T) {
	m := keyed.New(newCell, 0, nil)
	a := m.Get("a")
	assert.Same(t, a, m.Get("a"))
	assert.NotSame(t, a, m.Get("b"))
	assert.Equal(t, 2, m.Len())
	p, ok := m.Peek("a")
	assert.True(t, ok)
	assert.Same(t, a, p)
	_, ok = m.Peek("zz")
	assert.False(t, ok)
	assert.Equal(t, 2, m.Len(), "Peek never inserts")
}

func TestSweepDeletesOnlyKilledCells(t *testing.T) {
	m := keyed.New(newCell, 0, nil)
	add(m, "busy", m.Get("busy"), 1)
	m.Get("idle")
	assert.Equal(t, 1, m.Sweep(kill))
	assert.Equal(t, 1, m.Len())
	_, ok := m.Peek("idle")
	assert.False(t, ok)
	assert.Equal(t, 0, m.Sweep(kill))
}

func TestReviveReplacesOnlyTheDeadCell(t *testing.T) {
	m := keyed.New(newCell, 0, nil)
	c := m.Get("k")
	require.True(t, kill(c))
	fresh := m.Revive("k", c)
	assert.NotSame(t, c, fresh)
	assert.Same(t, fresh, m.Get("k"))
	// A second caller holding the same dead cell gets the live one.
	assert.Same(t, fresh, m.Revive("k", c))
	// A Sweep that tombstoned c must not delete its live replacement.
	assert.Equal(t, 0, m.Sweep(func(*cell) bool { return false }))
	assert.Equal(t, 1, m.Len())
}

func TestAutoSweepIsAmortised(t *testing.T) {
	var sweeps int
	var m *keyed.Map[cell]
	m = keyed.New(newCell, 4, func() int { sweeps++; return m.Sweep(kill) })
	for i := range 3 {
		add(m, strconv.Itoa(i), m.Get(strconv.Itoa(i)), 1) // busy keys survive
	}
	assert.Zero(t, sweeps)
	m.Get("idle-0") // the 4th key reaches the threshold
	assert.Equal(t, 1, sweeps)
	assert.Equal(t, 3, m.Len())
	// Next threshold: twice the survivors, 6.
	for i := 1; i <= 2; i++ {
		m.Get("idle-" + strconv.Itoa(i))
	}
	assert.Equal(t, 1, sweeps)
	m.Get("idle-3")
	assert.Equal(t, 2, sweeps)
	assert.Equal(t, 3, m.Len())
}

// TestSweepRacingUpdatesLosesNothing hammers keys with increments and
// decrements while a sweeper kills every idle cell. A cell with a positive
// count is live, so it must stay mapped: a worker that holds one must find it
// under its key. At the end every count is zero and a sweep empties the map.
func TestSweepRacingUpdatesLosesNothing(t *testing.T) {
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	m := keyed.New(newCell, 0, nil)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var swept atomic.Int64
	wg.Go(func() {
		for !stop.Load() {
			swept.Add(int64(m.Sweep(kill)))
		}
	})
	var workers sync.WaitGroup
	for g := range 8 {
		workers.Go(func() {
			for i := range rounds {
				key := strconv.Itoa((g + i) % 5)
				c := add(m, key, m.Get(key), 1)
				if got := m.Get(key); got != c {
					t.Errorf("live cell of %q was replaced", key)
					return
				}
				add(m, key, c, -1)
			}
		})
	}
	workers.Wait()
	stop.Store(true)
	wg.Wait()
	assert.Positive(t, swept.Load(), "the sweeper raced the workers")
	m.Sweep(kill)
	assert.Zero(t, m.Len())
}

// TestKeysAreCopiedOnInsert: a key that aliases a buffer the caller reuses
// after the call (a miss and a revival, the paths that store a key) leaves
// the map's keys intact.
func TestKeysAreCopiedOnInsert(t *testing.T) {
	m := keyed.New(newCell, 0, nil)
	buf := []byte("alpha")
	transient := func() string { return unsafe.String(&buf[0], len(buf)) }
	a := m.Get(transient())
	add(m, "alpha", a, 1)
	copy(buf, "omega")
	_, ok := m.Peek("alpha")
	assert.True(t, ok, "the key inserted by Get is a copy")
	_, ok = m.Peek("omega")
	assert.False(t, ok)

	add(m, "alpha", a, -1)
	require.Equal(t, 1, m.Sweep(kill))
	copy(buf, "alpha")
	revived := m.Revive(transient(), a)
	copy(buf, "omega")
	c, ok := m.Peek("alpha")
	assert.True(t, ok, "the key stored by Revive is a copy")
	assert.Same(t, revived, c)
	assert.Equal(t, 1, m.Len())
}
