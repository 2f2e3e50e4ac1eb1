package keyed

import (
	"math/rand/v2"
	"sync/atomic"
)

// inflightStripes is how many counters an inflight spreads its count over:
// enough that insertions on different CPUs seldom share one.
const inflightStripes = 8

// inflight counts the insertions and revivals under way: each is counted
// in before it publishes a node in the map and out once it has listed the
// node, or found it publishes none (see SweepAll). One counter would be
// written twice by every insertion, from every CPU: on two cores its cache
// line moving between them made an insertion into a map under contention
// take about 1.4 times as long. So the count is spread over stripes, each on
// a cache line of its own. An insertion adds its one to a stripe it picks at
// random and takes it off the same stripe: a stripe counts the insertions
// under way that picked it, and never reads below zero. The count is zero
// when every stripe reads zero; idle reads them one at a time, which is
// enough for SweepAll (see there).
//
// A table counts the keys it holds in an inflight too, for the same reason:
// there a writer, holding its shard's lock, adds to the stripe of its shard
// (see table.stripe), and Size sums the stripes.
//
// A line that holds a stripe's counter holds at most 56 bytes on either side
// of it: 56 bytes of padding on either side keep any other counter, and the
// Map's fields around the inflight, off that line wherever the Map lies. (A
// Map need not start on a line: the allocator puts a header before one this
// large. With no padding before the first counter, that counter would share
// the line of the list's head, which every insertion's push writes.)
type inflight struct {
	_       [56]byte // the field before off the first stripe's line
	stripes [inflightStripes]struct {
		n atomic.Int64
		_ [56]byte // the next stripe, or the field after, off this one's line
	}
}

// enter counts an insertion in and returns the stripe that exit takes it off.
func (f *inflight) enter() int {
	i := int(rand.Uint32() % inflightStripes)
	f.stripes[i].n.Add(1)
	return i
}

// exit counts out the insertion that enter counted in on stripe i.
func (f *inflight) exit(i int) {
	f.stripes[i].n.Add(-1)
}

// idle reports whether each stripe read zero, reading them in turn. When it
// reports true, every insertion counted in before it began was counted out
// before it read that insertion's stripe (which counts the insertion until
// then), so before idle returned. hook, the map's test hook (nil outside
// tests), is called with "stripe" between the readings of two stripes.
func (f *inflight) idle(hook func(step string)) bool {
	for i := range f.stripes {
		if i > 0 && hook != nil {
			hook("stripe")
		}
		if f.stripes[i].n.Load() != 0 {
			return false
		}
	}
	return true
}

// count returns the sum of the stripes, read in turn: exact while no stripe
// changes.
func (f *inflight) count() int64 {
	var sum int64
	for i := range f.stripes {
		sum += f.stripes[i].n.Load()
	}
	return sum
}
