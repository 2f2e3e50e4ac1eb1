package keyed

import (
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// keySizes are key lengths on either side of each way newNode stores a key.
var keySizes = []int{0, 1, 15, 16, 31, 32, 47, 48, 100, 255}

// TestNodeOutlivesEveryReferenceButOne: a node whose key is copied into its
// own allocation stays alive, key and cell intact, while anything points
// into it: only its key string (the string's bytes lie inside the node's
// allocation), or only its cell's address (as a limiter holds it), every
// other reference dropped (the map included), and the garbage collector run
// several times over, with allocations of the node's sizes in between to
// reuse what it frees. A long key's copy, an allocation of its own, stays
// alive with its node, held only by it when only the cell is. Once nothing
// points into them, node and copy are freed: the weak pointers that watch
// them can tell.
func TestNodeOutlivesEveryReferenceButOne(t *testing.T) {
	type fat struct {
		v   int64
		ptr *int64 // a cell with a pointer: the node's allocation is scanned for it
	}
	for _, hold := range []string{"key", "cell"} {
		t.Run("only its "+hold, func(t *testing.T) {
			m := New(func(c *fat) { c.ptr = new(int64) }, func() func(*fat) bool { return nil }, hotlimit.Options{})
			var keys []string
			var cells []*fat
			var watch []weak.Pointer[node[fat]]
			var copies []weak.Pointer[byte] // the copies of long keys; zero for the others
			for _, size := range keySizes {
				key := strings.Repeat(strconv.Itoa(size%10), size)
				c := m.Get(key)
				c.v, *c.ptr = int64(size), int64(size)
				n := m.cells.load(key)
				require.Same(t, c, &n.cell)
				watch = append(watch, weak.Make(n))
				if size > maxInline {
					copies = append(copies, weak.Make(unsafe.StringData(n.key())))
				} else {
					copies = append(copies, weak.Pointer[byte]{})
				}
				if hold == "key" {
					keys = append(keys, n.key())
				} else {
					cells = append(cells, c)
				}
			}
			m = nil
			churn := func() {
				for range 4 {
					runtime.GC()
					var junk [][]byte
					for range 1 << 12 {
						junk = append(junk, make([]byte, 48), make([]byte, 64), make([]byte, 80))
						for _, size := range keySizes {
							junk = append(junk, make([]byte, size)) // a long key's copy's size
						}
					}
					for _, j := range junk {
						for i := range j {
							j[i] = 0xAA
						}
					}
				}
			}
			churn()
			for i, size := range keySizes {
				want := strings.Repeat(strconv.Itoa(size%10), size)
				if hold == "key" {
					assert.Equal(t, want, keys[i], "a key of %d bytes, read after the collections", size)
				} else {
					n := (*node[fat])(unsafe.Pointer(cells[i]))
					assert.Equal(t, want, n.key(), "the key of a node held by its cell, %d bytes", size)
					assert.EqualValues(t, size, cells[i].v)
					assert.EqualValues(t, size, *cells[i].ptr)
				}
				if hold == "cell" || size > 0 && size <= maxInline { // else the key is no pointer into its node
					assert.NotNil(t, watch[i].Value(), "the node of a key of %d bytes is alive", size)
				}
				if size > maxInline {
					assert.NotNil(t, copies[i].Value(), "the copy of a key of %d bytes is alive", size)
				}
			}
			runtime.KeepAlive(keys)
			runtime.KeepAlive(cells)
			keys, cells = nil, nil
			churn()
			for i, size := range keySizes {
				assert.Nil(t, watch[i].Value(), "the node of a key of %d bytes, unreferenced, is freed", size)
				assert.Nil(t, copies[i].Value(), "the copy of a key of %d bytes, unreferenced, is freed", size)
			}
		})
	}
}

// TestNodeSizes: the sizes the Memory notes of the limiters and table.go
// count on. A slot takes 16 bytes, and a shard's writers' state 32. A map
// of one-word cells fills its allocation's size class, which an empty
// limiter's footprint is mostly made of: one more field would take 768
// bytes more for every limiter. A one-word cell's node
// takes 16 bytes, and with its key's length and bytes after it, 32 bytes
// for a key of up to 15 bytes, 48 for one of up to 31 and 64 for one of up
// to 47; slidinglog's 40-byte cell makes a 48-byte node, 64, 80 and 96
// bytes with its key. The allocations are of those sizes exactly (each a
// size class of Go's allocator), as measured.
func TestNodeSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the sizes are those of 64-bit platforms, which the Memory notes count")
	}
	type word struct{ _ uint64 } // the cell of tokenbucket, gcra, fixedwindow and slidingcounter
	type ring struct {           // slidinglog's cell: a head, its log and a hint
		_, _ uint64
		_    []int64
	}
	assert.EqualValues(t, 16, unsafe.Sizeof(node[word]{}))
	assert.EqualValues(t, 40, unsafe.Sizeof(ring{}))
	assert.EqualValues(t, 48, unsafe.Sizeof(node[ring]{}))
	assert.EqualValues(t, 16, unsafe.Sizeof(slot[word]{}))
	assert.EqualValues(t, 32, unsafe.Sizeof(shard[word]{}), "a shard's writers' state")
	// A map holds pointers and takes more than 512 bytes, so its allocation
	// starts with an 8-byte header: 5,368 bytes and the header fill the
	// 5,376-byte size class, the next of which is 6,144 bytes. (slidinglog's
	// map, whose sweep list's head holds a 40-byte cell, is in that one.)
	assert.LessOrEqual(t, unsafe.Sizeof(Map[word]{}), uintptr(5368), "a map of one-word cells")
	// perNode returns the bytes a node for a key of size bytes allocates:
	// the least of a few measurements of the process's allocations, as a
	// goroutine another test left behind may allocate during one.
	perNode := func(size int, newNode func(string) any) uintptr {
		key := strings.Repeat("k", size)
		const n = 1 << 12
		keep := make([]any, n)
		least := ^uint64(0)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range keep {
				keep[i] = newNode(key)
			}
			runtime.ReadMemStats(&after)
			least = min(least, (after.TotalAlloc-before.TotalAlloc)/n)
		}
		runtime.KeepAlive(keep)
		return uintptr(least)
	}
	assert.LessOrEqual(t, perNode(0, func(string) any { return new(Map[word]) }), uintptr(5376), "a map of one-word cells' allocation")
	assert.LessOrEqual(t, perNode(0, func(string) any { return new(Map[ring]) }), uintptr(6144), "slidinglog's map's allocation")
	w := New[word](nil, nil, hotlimit.Options{})
	r := New[ring](nil, nil, hotlimit.Options{})
	for _, c := range []struct {
		size       int
		word, ring uintptr
	}{{0, 32, 64}, {1, 32, 64}, {15, 32, 64}, {16, 48, 80}, {31, 48, 80}, {32, 64, 96}, {47, 64, 96}} {
		assert.Equal(t, c.word, perNode(c.size, func(k string) any { return w.newNode(k) }), "a one-word cell's node, key of %d bytes", c.size)
		assert.Equal(t, c.ring, perNode(c.size, func(k string) any { return r.newNode(k) }), "slidinglog's node, key of %d bytes", c.size)
	}
	// A longer key is an allocation of its own, of its length's size class.
	assert.Equal(t, uintptr(32+48), perNode(48, func(k string) any { return w.newNode(k) }))
	assert.Equal(t, uintptr(64+48), perNode(48, func(k string) any { return r.newNode(k) }))
}

// TestNodeViewsFitEveryForm: key and is read a node as header[C] before they
// know its form, and an inline key's node as inlineKey[C, [15]byte]; neither
// view may reach past the allocation of a form it reads, for cells of any
// size and alignment, on 32-bit platforms too: on 386 an int64 cell is
// 4-aligned and a pointer takes 4 bytes, so that a long key's node (a
// 12-byte node[int64], 8 bytes of header, a 4-byte pointer: 24 bytes) is
// smaller than inlineKey[int64, [15]byte] (28 bytes). And every form puts
// its header byte where header[C] reads it.
func TestNodeViewsFitEveryForm(t *testing.T) {
	viewsFit[struct{}](t)
	viewsFit[byte](t)
	viewsFit[int32](t)
	viewsFit[int64](t)
	viewsFit[[5]uint64](t)
	viewsFit[struct{ w atomic.Uint64 }](t) // the one-word limiters' cell
	viewsFit[struct {
		head atomic.Uint64
		s    []atomic.Int64
		hint atomic.Uint64
	}](t) // slidinglog's
}

// viewsFit checks TestNodeViewsFitEveryForm's sizes and offsets for a cell
// of type C.
func viewsFit[C any](t *testing.T) {
	t.Helper()
	var (
		h       header[C]
		in15    inlineKey[C, [15]byte]
		in31    inlineKey[C, [31]byte]
		in47    inlineKey[C, [47]byte]
		outline outlineKey[C]
	)
	cell := reflect.TypeFor[C]().String()
	forms := []struct {
		name         string
		size, offset uintptr
	}{
		{"inline up to 15", unsafe.Sizeof(in15), unsafe.Offsetof(in15.size)},
		{"inline up to 31", unsafe.Sizeof(in31), unsafe.Offsetof(in31.size)},
		{"inline up to 47", unsafe.Sizeof(in47), unsafe.Offsetof(in47.size)},
		{"long", unsafe.Sizeof(outline), unsafe.Offsetof(outline.head)},
	}
	for _, b := range []uintptr{unsafe.Offsetof(in15.b), unsafe.Offsetof(in31.b), unsafe.Offsetof(in47.b)} {
		assert.Equal(t, unsafe.Offsetof(h.head)+1, b, "an inline key's bytes right after the header byte (is reads them there), cell %s", cell)
	}
	for i, f := range forms {
		assert.LessOrEqual(t, unsafe.Sizeof(h), f.size, "a %s node read as header[%s]", f.name, cell)
		assert.Equal(t, unsafe.Offsetof(h.head), f.offset, "the header byte of a %s node, cell %s", f.name, cell)
		if i < 3 {
			assert.LessOrEqual(t, unsafe.Sizeof(in15), f.size, "a %s node read as inlineKey[%s, [15]byte]", f.name, cell)
		}
	}
}

// TestPanickingInitLeavesTheShardUnlocked: a cell's init runs under the lock
// of its key's shard, in an insertion and in a revival; when it panics, the
// panic reaches the caller with the lock released, so the next writer of
// that shard does not wait for ever.
func TestPanickingInitLeavesTheShardUnlocked(t *testing.T) {
	boom := false
	m := New(func(c *int64) {
		if boom {
			panic("init")
		}
	}, func() func(*int64) bool { return func(*int64) bool { return false } }, hotlimit.Options{MaxKeys: 10})
	x := m.Get("x")
	s := m.cells.writers(m.cells.hash("x"))
	boom = true
	require.PanicsWithValue(t, "init", func() { m.Get("y") }, "an insertion")
	sy := m.cells.writers(m.cells.hash("y"))
	require.True(t, sy.mu.TryLock(), "the insertion's shard unlocked")
	sy.mu.Unlock()
	require.PanicsWithValue(t, "init", func() { m.Revive("x", x) }, "a revival replacing a dead cell")
	require.True(t, s.mu.TryLock(), "the revival's shard unlocked")
	s.mu.Unlock()
	boom = false
	assert.NotNil(t, m.Get("y"))
}

// FuzzNodeKey: a node's key reads back as the key it was made for, in every
// form newNode stores (inline up to 15, 31 and 47 bytes, and out of line),
// and is(other) is key == other: a key of 255 bytes compared with a long
// key's node, whose header byte is 255, or an inline node's key with one
// of another length, never reads past what the node holds, nor takes a
// prefix of the node's key, "" included, for it; and a key of the node's
// length that differs in its first or last byte is another key, in every
// form (the hash filters such a key out of a lookup only until
// two keys' hashes collide).
func FuzzNodeKey(f *testing.F) {
	for _, size := range keySizes {
		f.Add(strings.Repeat("k", size), strings.Repeat("k", 255))
		f.Add(strings.Repeat("k", size), strings.Repeat("k", size))
		f.Add(strings.Repeat("k", size), strings.Repeat("k", size+1))
		if size > 0 {
			f.Add(strings.Repeat("k", size), strings.Repeat("k", size-1)) // a prefix of the node's key
			f.Add(strings.Repeat("k", size), "j"+strings.Repeat("k", size-1))
			f.Add(strings.Repeat("k", size), strings.Repeat("k", size-1)+"j")
		}
	}
	f.Add("\xff", "\xff")
	f.Fuzz(func(t *testing.T, key, other string) {
		n := newNode[uint64](key)
		r := newNode[[5]uint64](key) // a cell of slidinglog's size
		if n.key() != key || r.key() != key {
			t.Fatalf("node of %q read back as %q and %q", key, n.key(), r.key())
		}
		for _, k := range []string{key, other} {
			if got, want := n.is(k), k == key; got != want || r.is(k) != want {
				t.Fatalf("node of %q: is(%q) = %v and %v, want %v", key, k, got, r.is(k), want)
			}
		}
	})
}
