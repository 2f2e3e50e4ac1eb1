package fixedwindow

import (
	"testing"

	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestKillLosesToAnAdmission: a sweep's kill of a key whose window ended and
// an admission on it race; the kill swaps the tombstone in only over the
// word it found idle, so when the admission's swap lands first the kill
// fails and the key keeps the admission: never both (see
// limitertest.KillOrWriteNotBoth). A kill that stored its tombstone instead
// would erase a request already counted, and the key's next caller would
// find a fresh key with its whole limit.
func TestKillLosesToAnAdmission(t *testing.T) {
	const cur = 10
	idle := packed.PackWindow(cur-1, 3) // counted in the window before cur: idle in cur
	rounds := limitertest.RaceRounds()
	c := newCell()
	limitertest.KillOrWriteNotBoth(t, rounds,
		func() { c.word.Store(idle) },
		func() bool { return c.word.CompareAndSwap(idle, packed.PackWindow(cur, 1)) }, // admit in window cur
		func() bool { return c.kill(cur) })
}
