package limitertest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// NestedCallsChainRemaining nests calls on one key inside each other's
// clock readings, under a frozen clock, and checks the linearizable
// Remaining property on the path a contended hammer rarely reaches: the
// word loaded again after the clock reading differs from the one loaded
// before it, because a call nested in the reading wrote it.
//
// For each of seeds runs, a limiter of 3 to 12 per second, built by
// newLimiter on a HookClock, and newModel's model of it take a random
// number of requests at a random time (none in half the runs); the clock
// then freezes there or within two windows after. Top-level calls, AllowRemaining or Take(key, n) for n in
// 1..3, each run, inside every clock reading they make, up to two further
// such calls, and those inside theirs, two to four levels deep: the pattern
// is drawn from the run's seed, so a failure replays exactly. Under the
// frozen clock a call takes effect
//
//   - when admitted, at its CAS, after every call nested in its readings;
//   - when denied, on the key as it was when its last clock reading began:
//     a denial is decided only on a reading taken after the word it judges,
//     so a call whose word changed inside its reading must read the clock
//     again before it may deny.
//
// Each decision must be the model's with the calls in that order at the
// frozen time (Allowed and Remaining for AllowRemaining, the whole Decision
// for Take); the admissions' Remaining values, sorted, must form one chain
// down from the key's Remaining at the freeze, each admission of n below
// the one before by n, so that no value is reported twice; no denial may
// report room for its n; and the key's state must end as the model's, read
// at the freeze and half a window and a window later. It also checks that
// the runs reached the path: admissions and denials, each many times, of
// calls whose word a nested call changed inside their first reading.
func NestedCallsChainRemaining(t *testing.T, newLimiter Constructor, newModel func(limit int, window time.Duration) Model, seeds int) {
	t.Helper()
	const window = time.Second
	var changedAllowed, changedDenied, deepest int
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 29))
		limit := 3 + rng.IntN(10)
		r := &nestedRun{t: t, rng: rng, maxDepth: 2 + rng.IntN(3)}
		l, err := newLimiter(limit, window, r.clock.Read)
		require.NoError(t, err)
		var ok bool
		r.lim, ok = l.(remainingAllower)
		require.True(t, ok, "%T has AllowRemaining", l)
		burster, ok := l.(hotlimit.Burster)
		require.True(t, ok, "%T has Burst", l)
		r.newModel = func() Model { return newModel(limit, window) }
		r.model = r.newModel()

		// A first take at a random time, then the freeze.
		at := rng.Int64N(int64(window))
		if p := rng.IntN(burster.Burst() + 1); p > 0 && rng.IntN(2) == 0 {
			r.clock.Now.Store(at)
			want := r.model("k", p, at)
			require.Equal(t, want, l.Take("k", p), "seed %d: the first take", seed)
			if want.Allowed {
				r.history = append(r.history, nestedTake{p, at})
			}
		}
		r.now = at
		if rng.IntN(4) > 0 {
			r.now += rng.Int64N(2 * int64(window))
		}
		r.clock.Now.Store(r.now)
		r.first = len(r.history)
		r.capacity = r.model("k", 0, r.now).Remaining
		r.msg = fmt.Sprintf("seed %d (limit %d, burst %d, Remaining %d at %v)", seed, limit, burster.Burst(), r.capacity, time.Duration(r.now))

		for i := range 3 + rng.IntN(4) {
			r.call(1, []int{i})
		}
		if !t.Failed() {
			r.checkChain()
			for _, later := range []int64{0, int64(window) / 2, int64(window)} {
				r.clock.Now.Store(r.now + later)
				assert.Equal(t, r.model("k", 0, r.now+later), l.Take("k", 0), "%s: the key's state %v after the freeze", r.msg, time.Duration(later))
			}
		}
		if t.Failed() {
			return
		}
		changedAllowed += r.changedAllowed
		changedDenied += r.changedDenied
		deepest = max(deepest, r.deepest)
	}
	t.Logf("%d runs: %d admissions and %d denials of calls whose word changed inside their first reading; %d levels deep at most",
		seeds, changedAllowed, changedDenied, deepest)
	assert.Greater(t, changedAllowed, seeds/2, "admissions on a word that changed inside the first reading")
	assert.Greater(t, changedDenied, seeds/2, "denials on a word that changed inside the first reading")
}

// nestedTake is an admission of n requests at the clock reading at.
type nestedTake struct {
	n  int
	at int64
}

// nestedAdmission is an admission of n requests that reported remaining.
type nestedAdmission struct{ n, remaining int }

// nestedRun is one run of NestedCallsChainRemaining.
type nestedRun struct {
	t        *testing.T
	rng      *rand.Rand
	clock    HookClock
	lim      remainingAllower
	newModel func() Model
	model    Model        // after every admission so far
	history  []nestedTake // the admissions in the order they took effect
	first    int          // history's length at the freeze
	now      int64        // the frozen clock
	capacity int          // the key's Remaining at the freeze
	maxDepth int
	msg      string

	admitted       []nestedAdmission // since the freeze
	changedAllowed int
	changedDenied  int
	deepest        int
}

// replay returns the model after the first k admissions: r.model when k
// is all of them (a denial changes no model).
func (r *nestedRun) replay(k int) Model {
	if k == len(r.history) {
		return r.model
	}
	m := r.newModel()
	for _, e := range r.history[:k] {
		m("k", e.n, e.at)
	}
	return m
}

// call makes one random call at depth, each of whose clock readings runs
// up to two calls one level deeper while depth allows, and checks its
// decision.
func (r *nestedRun) call(depth int, path []int) {
	if r.t.Failed() {
		return
	}
	n := 1 + r.rng.IntN(3)
	allowRemaining := n == 1 && r.rng.IntN(2) == 0
	r.deepest = max(r.deepest, depth)
	readings, last := 0, 0 // last: history's length when the last reading began
	changed := false       // a nested call took effect inside the first reading
	var hook func()
	hook = func() {
		readings++
		last = len(r.history)
		if depth < r.maxDepth && r.rng.IntN(readings+1) == 0 {
			for i := range 1 + r.rng.IntN(2) {
				r.call(depth+1, append(path[:depth:depth], i))
			}
		}
		if readings == 1 {
			changed = len(r.history) > last
		}
		r.clock.Hook = hook // the call's next reading, if it makes one
	}
	r.clock.Hook = hook
	var d hotlimit.Decision
	if allowRemaining {
		d.Allowed, d.Remaining = r.lim.AllowRemaining("k")
	} else {
		d = r.lim.Take("k", n)
	}
	r.clock.Hook = nil
	name := func() string { // formatted only on a failure
		if allowRemaining {
			return fmt.Sprintf("%s: call %v, AllowRemaining", r.msg, path)
		}
		return fmt.Sprintf("%s: call %v, Take(%d)", r.msg, path, n)
	}
	if readings == 0 {
		r.t.Errorf("%s read no clock", name())
	}
	if r.t.Failed() {
		return
	}
	var want hotlimit.Decision
	on := last // the admissions the model has seen when it decides
	if d.Allowed {
		on = len(r.history)
		want = r.model("k", n, r.now)
		if want.Allowed {
			r.history = append(r.history, nestedTake{n, r.now})
			r.admitted = append(r.admitted, nestedAdmission{n, d.Remaining})
		}
		if changed {
			r.changedAllowed++
		}
	} else {
		if d.Remaining >= n {
			r.t.Errorf("%s: denied with room for it: %+v", name(), d)
		}
		want = r.replay(last)("k", n, r.now)
		if changed {
			r.changedDenied++
		}
	}
	if allowRemaining {
		want = hotlimit.Decision{Allowed: want.Allowed, Remaining: want.Remaining}
	}
	if d != want {
		assert.Equal(r.t, want, d, "%s (%d readings), the model after %d admissions since the freeze",
			name(), readings, on-r.first)
	}
}

// checkChain checks that the admissions' Remaining values, sorted, step
// down from the capacity by each admission's n: each once.
func (r *nestedRun) checkChain() {
	adm := slices.Clone(r.admitted)
	slices.SortStableFunc(adm, func(a, b nestedAdmission) int { return b.remaining - a.remaining })
	room := r.capacity
	for i, a := range adm {
		if !assert.Equal(r.t, room-a.n, a.remaining, "%s: admission %d of %d by Remaining, of %d: (n, Remaining) %v",
			r.msg, i, len(adm), a.n, adm) {
			return
		}
		room -= a.n
	}
}
