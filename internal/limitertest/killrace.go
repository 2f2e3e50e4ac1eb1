package limitertest

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// KillOrWriteNotBoth races, rounds times, one write on a key's word against
// one kill (a sweep's tombstone swap, decided on the word it loaded): reset
// puts the word back to a value kill judges idle, write is an admission's
// compare-and-swap from that value, reporting whether it landed, and kill
// reports whether it tombstoned the word. Exactly one of the two may win
// each round: a kill whose swap landed over a write would erase an
// admission that was already counted, and the key's next caller would find
// a fresh key, with its full quota. The writer gets a head start of a
// varying number of spins, so that its swap lands before, inside and after
// the kill's load-to-swap window across the rounds. On a machine with one
// core the two seldom overlap, and the test proves little there; it never
// fails on a kill that keeps the rule.
func KillOrWriteNotBoth(t *testing.T, rounds int, reset func(), write, kill func() bool) {
	t.Helper()
	var ready, done atomic.Int64
	var wrote atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for r := int64(1); r <= int64(rounds); r++ {
			wait(&ready, r)
			wrote.Store(write())
			done.Store(r)
		}
	})
	rng := rand.New(rand.NewPCG(uint64(rounds), 7))
	head := 16 // the writer's head start, in spins: kept where either side wins as often
	both, killed, written := 0, 0, 0
	for r := int64(1); r <= int64(rounds); r++ {
		reset()
		ready.Store(r)
		for range head/2 + rng.IntN(head+1) {
			spin()
		}
		k := kill()
		wait(&done, r)
		w := wrote.Load()
		switch {
		case k && w:
			both++
		case k:
			head += 1 + head/8
		case w:
			head -= 1 + head/8
			head = max(head, 0)
		}
		if k {
			killed++
		}
		if w {
			written++
		}
	}
	wg.Wait()
	assert.Zero(t, both, "rounds where a kill landed over a write (of %d: %d kills, %d writes)", rounds, killed, written)
}

// spinSink keeps spin's loop from being optimized away.
var spinSink atomic.Int64

// spin burns a few nanoseconds.
func spin() { spinSink.Add(1) }

// wait spins until v reaches r, yielding now and then, so that a machine
// with fewer cores than spinners still runs the one it waits for.
func wait(v *atomic.Int64, r int64) {
	for i := 0; v.Load() < r; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
}
