package keyed

// Collide puts a node of the key other in m under key's hash, as a
// collision of the two keys' 64-bit hashes would, and returns its cell; key
// must not be held, so that the node comes first on key's probe: Find(key)
// then finds it, and its Cell(key) is nil. It returns nil when key is held.
// The node is counted by Len, but neither listed nor counted under a key
// cap. It is for tests, which have no other way to drive a limiter down the
// path a collision takes (see Found).
func Collide[C any](m *Map[C], key, other string) *C {
	h := m.cells.hash(key)
	s := m.cells.lock(h)
	defer s.mu.Unlock()
	held, free := m.cells.locked(s, h, key)
	if held != nil {
		return nil
	}
	n := m.newNode(other)
	m.cells.insert(s, h, n, free)
	return &n.cell
}
