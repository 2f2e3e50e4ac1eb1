package limitertest

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
// the kill's load-to-swap window across the rounds (see Race). On a machine
// with one core the two seldom overlap, and the test proves little there;
// it never fails on a kill that keeps the rule.
func KillOrWriteNotBoth(t *testing.T, rounds int, reset func(), write, kill func() bool) {
	t.Helper()
	var k, w bool
	both, killed, written := 0, 0, 0
	Race(rounds, reset, func() { w = write() }, func() { k = kill() }, func() int {
		if k {
			killed++
		}
		if w {
			written++
		}
		switch {
		case k && w:
			both++
		case k:
			return 1
		case w:
			return -1
		}
		return 0
	})
	assert.Zero(t, both, "rounds where a kill landed over a write (%d kills, %d writes in all)", killed, written)
}

// WriteAndRefundBothCount races, rounds times, one write on a key's word
// against one Refund on the key: reset puts the word back to a value both
// apply to, write is an admission's compare-and-swap from that value,
// reporting whether it landed (it does not when the refund's write came
// first), and kept, called once both are done, reports whether the word
// holds the effect of each: the refund's, and the admission's if it landed.
// A refund decides its word on the one it loaded, and swaps it in only over
// that one; a refund that stored its word instead would erase an admission
// landing between its load and its write, and the key would hold a request
// less than it counted. The writer gets a head start of a varying number of
// spins, so that its swap lands before, inside and after the refund's
// load-to-swap window across the rounds (see Race).
func WriteAndRefundBothCount(t *testing.T, rounds int, reset func(), write func() bool, refund func(), kept func(wrote bool) bool) {
	t.Helper()
	var w bool
	lost, written := 0, 0
	Race(rounds, reset, func() { w = write() }, refund, func() int {
		if !kept(w) {
			lost++
		}
		if w {
			written++
			return -1
		}
		return 1
	})
	assert.Zero(t, lost, "rounds where the key lost a write (%d admissions landed in all)", written)
}

// Race runs rounds rounds of write, on a goroutine of its own, against op,
// on the caller's: reset before each round, then write after a head start
// of a varying number of spins. settle runs once both are done, and steers
// the head start: 1 when write came too late (op saw none of it), −1 when
// it came too early (op saw all of it), 0 to keep it. So the rounds keep
// straddling op's window, wherever it lies, within an eighth of the head
// start either side. A round counts only when it ended within a few
// microseconds: in one that took longer a goroutine was most likely off
// its core (the machine is loaded), and the two did not race. Race runs
// until rounds rounds counted, or five times as many ran.
func Race(rounds int, reset, write, op func(), settle func() int) {
	var ready, done atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for r := int64(1); ; r++ {
			if wait(&ready, r) {
				return
			}
			write()
			done.Store(r)
		}
	})
	rng := rand.New(rand.NewPCG(uint64(rounds), 7))
	head := 16 // the writer's head start, in spins
	counted := 0
	for r := int64(1); counted < rounds && r <= 5*int64(rounds); r++ {
		reset()
		start := time.Now()
		ready.Store(r)
		for range head - head/8 + rng.IntN(head/4+1) {
			spin()
		}
		op()
		wait(&done, r)
		if time.Since(start) < 20*time.Microsecond {
			counted++
		}
		switch settle() {
		case 1:
			head += 1 + head/8
		case -1:
			head -= 1 + head/8
			head = max(head, 0)
		}
	}
	ready.Store(-1) // the writer, waiting for the next round, stops
	wg.Wait()
}

// spinSink keeps spin's loop from being optimized away.
var spinSink atomic.Int64

// spin burns a few nanoseconds.
func spin() { spinSink.Add(1) }

// wait spins until v reaches r, yielding now and then, so that a machine
// with fewer cores than spinners still runs the one it waits for. It
// returns true at once when v is negative: told to stop.
func wait(v *atomic.Int64, r int64) (stop bool) {
	for i := 0; ; i++ {
		switch x := v.Load(); {
		case x < 0:
			return true
		case x >= r:
			return false
		}
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
}

// RaceRounds is how many rounds a test asks of Race and the checks built
// on it: 3000, or 1000 with -short.
func RaceRounds() int {
	if testing.Short() {
		return 1000
	}
	return 3000
}
