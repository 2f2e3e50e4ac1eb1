package keyed

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestInflightCountsOutOnTheStripeCountedIn: exit takes an insertion off
// the stripe enter put it on, so no stripe reads below zero and the count
// reads zero only once every insertion counted in is counted out, in any
// order.
func TestInflightCountsOutOnTheStripeCountedIn(t *testing.T) {
	var f inflight
	require.True(t, f.idle(nil))
	var in []int
	for range 100 {
		in = append(in, f.enter())
	}
	assert.EqualValues(t, 100, f.count())
	for k := len(in) - 1; k >= 0; k-- { // the reverse order
		require.False(t, f.idle(nil), "%d still counted in", k+1)
		f.exit(in[k])
		for i := range f.stripes {
			require.GreaterOrEqual(t, f.stripes[i].n.Load(), int64(0), "stripe %d", i)
		}
	}
	assert.True(t, f.idle(nil))
	assert.Zero(t, f.count())
}

// TestInflightStripesKeepTheirCacheLines: no 64-byte cache line holding a
// stripe's counter holds another's, or the Map field before or after the
// inflight, wherever the Map lies in memory. A line holding the counter's 8
// bytes holds at most 56 bytes on either side of them, so 56 bytes of
// padding on either side keep everything else off it. A Map does not start
// on a line (the allocator puts a header before it): with no padding before
// the first counter, that counter shared its line with the list's head,
// which every insertion's push writes.
func TestInflightStripesKeepTheirCacheLines(t *testing.T) {
	var f inflight
	const pad = 64 - unsafe.Sizeof(f.stripes[0].n)
	at := func(i int) uintptr {
		return uintptr(unsafe.Pointer(&f.stripes[i].n)) - uintptr(unsafe.Pointer(&f))
	}
	assert.GreaterOrEqual(t, at(0), pad, "padding before the first stripe")
	for i := 1; i < inflightStripes; i++ {
		assert.GreaterOrEqual(t, at(i)-at(i-1), uintptr(64), "stripe %d after stripe %d", i, i-1)
	}
	last := at(inflightStripes-1) + unsafe.Sizeof(f.stripes[0].n)
	assert.GreaterOrEqual(t, unsafe.Sizeof(f)-last, pad, "padding after the last stripe")
}

// TestInsertionAllocatesItsKeyAndNodeOnly: counting an insertion in and out
// allocates nothing (the stripe is drawn from the runtime's own generator),
// so that an insertion into a table that does not grow allocates its node,
// with the copy of its key in the same allocation when the key is up to 47
// bytes long, in one of its own when it is longer, and nothing else (a slot
// of the table is no allocation of its own).
func TestInsertionAllocatesItsKeyAndNodeOnly(t *testing.T) {
	var f inflight
	assert.Zero(t, testing.AllocsPerRun(100, func() { f.exit(f.enter()) }), "counting in and out")
	never := func() func(*int64) bool { return func(*int64) bool { return false } }
	m := New(nil, never, hotlimit.Options{MaxKeys: 4000}) // sized up front: no growth
	warm := 0
	for i := range m.cells.arrays {
		for m.cells.arrays[i].Load() == nil { // every shard's array allocated
			m.Get("warm" + strconv.Itoa(warm))
			warm++
		}
	}
	inserted := warm
	for _, c := range []struct {
		prefix string
		allocs float64
	}{
		{"k", 1},                     // up to 15 bytes
		{strings.Repeat("k", 20), 1}, // up to 31 bytes
		{strings.Repeat("k", 40), 1}, // up to 47 bytes
		{strings.Repeat("k", 50), 2}, // longer
	} {
		keys := make([]string, 101) // AllocsPerRun runs once more than asked
		for i := range keys {
			keys[i] = c.prefix + strconv.Itoa(i)
		}
		i := 0
		assert.Equal(t, c.allocs, testing.AllocsPerRun(100, func() {
			m.Get(keys[i])
			i++
		}), "an insertion of a key of %d bytes", len(keys[0]))
		inserted += len(keys)
	}
	assert.Equal(t, inserted, m.Len(), "each run inserted a key")
	assert.Zero(t, m.cells.growths.Load(), "no array grew")
}
