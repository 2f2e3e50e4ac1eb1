package keyed

// OnWalk sets a hook called after each bounded walk (an auto-sweep step or a
// key-cap eviction) with the nodes it visited. Walks run concurrently: so may
// the hook.
func OnWalk[C any](m *Map[C], f func(visits int)) { m.walked = f }

// Listed returns the keys of the nodes on the sweep list, newest first, dead
// ones awaiting a visit included. Call it while nothing changes the map.
func Listed[C any](m *Map[C]) []string {
	var keys []string
	for n := m.head.next.Load(); n != nil; n = n.next.Load() {
		keys = append(keys, n.key())
	}
	return keys
}

// Reserved returns the keys held or reserved under the key cap.
func Reserved[C any](m *Map[C]) int64 { return m.count.Load() }

// OnStep sets a hook called at named steps: "miss" (Get found no cell and
// is about to insert one, reserving room under a key cap), "claim" (a
// walker read its chunk and is about to move the cursor), "claimed" (it
// moved it, and is about to visit), "revive" (Revive made its key cap check
// and is about to insert), "drop" (Drop found its key mapping to the dead
// cell and is about to delete it), "remove" (a deletion found the key
// mapping to the dead node, and is about to delete it if it still does),
// "push" (an insertion or a revival published its fresh node in the map
// and is about to list it), and "stripe" (a reading of the insertions under
// way, as SweepAll makes, read a stripe zero and is about to read the next).
// Set it before the goroutines that use the map start.
func OnStep[C any](m *Map[C], f func(step string)) { m.hook = f }

// Walk runs one bounded walk, as an auto-sweep step does (first unset) or a
// key cap's eviction (first set: it stops once the map has room for a key),
// with the map's judge, and returns how many keys it deleted.
func Walk[C any](m *Map[C], budget, chunk int, first bool) int {
	var below int64
	if first {
		below = int64(m.maxKeys)
	}
	deleted, _ := m.walk(budget, chunk, m.judge(), below)
	return deleted
}

// Growths returns how many times the map's table has grown.
func Growths[C any](m *Map[C]) int64 { return m.cells.growths.Load() }

// Listing returns how many insertions and revivals are under way, counted
// in listing and not yet out: see count.
func Listing[C any](m *Map[C]) int64 { return m.listing.count() }

// CountIn counts an insertion in on stripe, as an insertion that picked it
// does before it publishes its node: it draws stripes as one does until it
// draws stripe, and takes each other draw back (not through exit) as if it
// had never been made. It returns the stripe to pass to CountOut.
func CountIn[C any](m *Map[C], stripe int) int {
	for {
		i := m.listing.enter()
		if i == stripe {
			return i
		}
		m.listing.stripes[i].n.Add(-1)
	}
}

// CountOut counts out the insertion CountIn counted in on stripe, as an
// insertion does once it has listed its node.
func CountOut[C any](m *Map[C], stripe int) { m.listing.exit(stripe) }

// Stripes returns the count of the insertions under way on each stripe.
func Stripes[C any](m *Map[C]) []int64 {
	s := make([]int64, len(m.listing.stripes))
	for i := range s {
		s[i] = m.listing.stripes[i].n.Load()
	}
	return s
}
