package bench

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/internal/models"
)

// The comparison is fair only if every implementation enforces, in every
// scenario, the policy its hotlimit counterpart enforces: the same limit, the
// same burst, the same refill, per key. These tests drive each pair through
// the same fixed sequence on a stepped clock and compare every decision.

// counterparts pairs each implementation that takes a clock with the hotlimit
// limiter of the same algorithm.
var counterparts = []struct{ name, hotlimit string }{
	{"mutex", "tokenbucket"},
	{"xtime", "tokenbucket"},
	{"service", "tokenbucket"},
	{"coarse", "tokenbucket"},
	{"throttled", "gcra"},
}

// partialRefills reports whether partial refills are compared under p. Under
// hotAllow (65536 per 1 ms) they are not: tokenbucket's fixed point has a unit
// of one whole token there (see tokenbucket's doc), so after a partial refill
// it may admit one more than the float64 buckets of the mutex port and
// x/time/rate, and throttled's emission interval is Window/Limit truncated to
// whole nanoseconds, 15 ns for 15.26. That policy never runs out in a
// benchmark (hit=allow fails on any denial), so no timed decision depends on
// its refill; its burst and whole-window refills are still compared.
func partialRefills(p impl.Policy) bool { return p != hotAllow }

// benchPolicies returns every policy the benchmarks give im, once each.
func benchPolicies(im impl.Impl) []impl.Policy {
	ps := []impl.Policy{manyAllow} // BenchmarkInsert's
	for _, sc := range scenarios {
		if p := sc.policyFor(im); !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// step is one phase of the sequence: advance the clock by tokens' worth of
// refill (Window·tokens/Limit; full: a whole Window, which refills any
// bucket), then call key until it is denied.
type step struct {
	tokens float64
	full   bool
	key    string
}

// sequence returns the phases for p. Partial refills are whole tokens plus a
// quarter or a half, starting from an empty bucket with nothing pending, so
// that no implementation's rounding (float64 tokens, fixed point, whole
// nanoseconds) sits near a decision boundary.
func sequence(p impl.Policy, exact bool) []step {
	half := float64(p.Limit / 2)
	steps := []step{
		{key: "a"},             // a new key's burst
		{key: "b"},             // another key: its own burst
		{tokens: 0, key: "a"},  // nothing refilled
		{full: true, key: "a"}, // a whole window: full again
	}
	if exact {
		steps = append(steps,
			step{tokens: 0.5, key: "a"},
			step{full: true, key: "a"},
			step{tokens: 1.25, key: "a"},
			step{full: true, key: "a"},
			step{tokens: half + 0.5, key: "a"},
			step{tokens: 0, key: "b"}, // b refilled meanwhile
			step{full: true, key: "b"},
			step{tokens: float64(p.Limit) + 0.25, key: "a"}, // capped at the burst
		)
	}
	return steps
}

// start is the stepped clock's first reading: any instant (a whole number of
// every window used, so a fixed window starts there).
const start = int64(time.Hour)

// admissions runs the sequence on a new instance of im under p and returns
// the calls admitted in each phase.
func admissions(t *testing.T, im impl.Impl, p impl.Policy, steps []step) []int {
	t.Helper()
	var now atomic.Int64
	now.Store(start)
	inst, err := im.New(p, impl.Options{Clock: now.Load})
	require.NoError(t, err, "impl=%s policy %v", im.Name, p)
	defer inst.Close()
	return play(p, steps, &now, func(key string) int {
		n := 0
		for inst.Allow(key) {
			n++
			require.LessOrEqual(t, n, p.Limit, "impl=%s policy %v: more than the limit at once", im.Name, p)
		}
		return n
	})
}

// play runs steps, moving now, and returns what drain admitted in each
// phase; drain calls key until it is denied and returns the calls admitted.
func play(p impl.Policy, steps []step, now *atomic.Int64, drain func(key string) int) []int {
	got := make([]int, len(steps))
	for i, s := range steps {
		switch {
		case s.full:
			now.Add(int64(p.Window))
		default:
			now.Add(int64(s.tokens*float64(p.Window)/float64(p.Limit) + 0.5))
		}
		got[i] = drain(s.key)
	}
	return got
}

// model is the reference model (internal/models) of an algorithm under p,
// with its time 0 at the clock reading epoch.
type model func(key string, n int, now int64) hotlimit.Decision

// algorithms maps each implementation that takes a clock to the model of the
// algorithm it implements, under a policy p whose clock starts at epoch.
var algorithms = map[string]func(p impl.Policy, epoch int64) model{
	"tokenbucket": tokenBucketModel,
	"mutex":       tokenBucketModel,
	"xtime":       tokenBucketModel,
	"service":     tokenBucketModel,
	"coarse":      tokenBucketModel,
	"gcra":        gcraModel,
	"throttled":   gcraModel,
	"fixedwindow": func(p impl.Policy, _ int64) model { return models.NewFixedWindow(p.Limit, p.Window).Take },
	"slidinglog":  func(p impl.Policy, _ int64) model { return models.NewSlidingLog(p.Limit, p.Window).Take },
	"slidingcounter": func(p impl.Policy, _ int64) model {
		return models.NewSlidingCounter(p.Limit, p.Window).Take
	},
}

func tokenBucketModel(p impl.Policy, epoch int64) model {
	return models.NewTokenBucket(p.Limit, p.Limit, p.Window, epoch).Take
}

func gcraModel(p impl.Policy, epoch int64) model {
	return models.NewGCRA(p.Limit, p.Limit, p.Window, epoch).Take
}

// clockless are the implementations that cannot take a clock, checked by
// TestPeersWithoutAClockKeepThePolicy instead.
var clockless = []string{"golimiter", "ulule"}

// TestEveryImplAdmitsAsItsModel: under every policy the benchmarks give it,
// every implementation that takes a clock admits, phase by phase on a stepped
// clock, exactly what the reference model of its algorithm (internal/models,
// the models hotlimit's own tests replay) admits under that policy: the same
// burst, the same refill, the same window, per key. An adapter that passes
// its library another limit, burst or window fails here.
func TestEveryImplAdmitsAsItsModel(t *testing.T) {
	for _, im := range impl.All() {
		newModel, ok := algorithms[im.Name]
		if !ok {
			require.False(t, im.Clock, "impl=%s takes a clock but has no model here", im.Name)
			require.Contains(t, clockless, im.Name, "impl=%s is checked nowhere", im.Name)
			continue
		}
		require.True(t, im.Clock, "impl=%s has a model but takes no clock", im.Name)
		for _, p := range benchPolicies(im) {
			t.Run(fmt.Sprintf("impl=%s/policy=%v", im.Name, p), func(t *testing.T) {
				steps := sequence(p, partialRefills(p))
				var now atomic.Int64
				now.Store(start)
				m := newModel(p, start)
				// All of a phase's calls are at one instant, where n single
				// requests pass exactly when one Take of n does: ask the
				// model how many pass, take them, and check the next is
				// denied (one call per request would make the sliding
				// log's model, which copies its log per call, quadratic).
				want := play(p, steps, &now, func(key string) int {
					n := m(key, 0, now.Load()).Remaining
					if n > 0 {
						require.True(t, m(key, n, now.Load()).Allowed, "the model admits the %d it reports", n)
					}
					require.False(t, m(key, 1, now.Load()).Allowed, "the model denies past the %d it reports", n)
					return n
				})
				got := admissions(t, im, p, steps)
				assert.Equal(t, want, got, "admitted per phase: the model, then impl=%s", im.Name)
				assert.Equal(t, p.Limit, want[0], "a new key's burst is the limit")
			})
		}
	}
}

// TestPeersDecideAsTheirCounterpart: under every policy the benchmarks use,
// each implementation that takes a clock admits, phase by phase, exactly what
// the hotlimit limiter of the same algorithm admits.
func TestPeersDecideAsTheirCounterpart(t *testing.T) {
	for _, c := range counterparts {
		im, ok := impl.ByName(c.name)
		require.True(t, ok, c.name)
		require.True(t, im.Clock, "impl=%s takes a clock", c.name)
		hot, ok := impl.ByName(c.hotlimit)
		require.True(t, ok, c.hotlimit)
		for _, p := range benchPolicies(im) {
			require.Contains(t, benchPolicies(hot), p, "impl=%s and %s get the same policies", c.name, c.hotlimit)
			t.Run(fmt.Sprintf("impl=%s/policy=%v", c.name, p), func(t *testing.T) {
				steps := sequence(p, partialRefills(p))
				want := admissions(t, hot, p, steps)
				got := admissions(t, im, p, steps)
				assert.Equal(t, want, got, "admitted per phase: %s, then impl=%s", c.hotlimit, c.name)
				assert.Equal(t, p.Limit, want[0], "a new key's burst is the limit")
			})
		}
	}
}

// TestEveryImplGetsTheScenarioPolicy: every implementation gets each
// scenario's policy, except go-limiter on one hot key (whose refill of
// min(Limit, Window/Limit) per elapsed window would deny there; it gets a
// policy that never runs out, as the scenario's never does for the others).
func TestEveryImplGetsTheScenarioPolicy(t *testing.T) {
	for _, sc := range scenarios {
		for _, im := range impl.All() {
			p := sc.policyFor(im)
			if im.Name == "golimiter" && sc.policy == hotAllow {
				assert.Equal(t, goLimiterHotAllow, p)
				// go-limiter's refill per window, with Window in ns.
				assert.Less(t, int64(sc.policy.Window)/int64(sc.policy.Limit), int64(sc.policy.Limit),
					"the scenario's own policy would starve go-limiter")
				continue
			}
			assert.Equal(t, sc.policy, p, "impl=%s %s", im.Name, sc)
		}
	}
}

// TestPeersWithoutAClockKeepThePolicy: go-limiter and ulule read the real
// clock, so their policy is checked in real time, under each policy the
// benchmarks give them (but go-limiter's that never runs out):
//
//   - burst: with the window an hour, which does not pass during the test, a
//     new key passes exactly the limit, and another key is independent;
//   - window: with the policy's window, or 50 ms for one longer than the test
//     can wait, a drained key is still denied before a window has passed
//     since its first call (checked when the machine let the test get there
//     in time), and passes the whole limit again once more than a window has
//     passed since its last admission. An adapter that gives its library a
//     longer or a shorter window fails one or the other.
//
// Only lower bounds on elapsed time are relied upon (a sleep lasts at least
// its duration), so a loaded machine can skip a check but not fail it.
func TestPeersWithoutAClockKeepThePolicy(t *testing.T) {
	for _, name := range clockless {
		im, ok := impl.ByName(name)
		require.True(t, ok)
		require.False(t, im.Clock, "impl=%s would be in TestEveryImplAdmitsAsItsModel", name)
		for _, p := range benchPolicies(im) {
			if p.Limit > 1<<16 {
				continue // go-limiter's never-ending policy on one hot key
			}
			t.Run(fmt.Sprintf("impl=%s/policy=%v/burst", name, p), func(t *testing.T) {
				burst := impl.Policy{Limit: p.Limit, Window: time.Hour}
				inst, err := im.New(burst, impl.Options{})
				require.NoError(t, err)
				defer inst.Close()
				for _, key := range []string{"a", "b"} {
					assert.Equal(t, p.Limit, drain(inst, key, p.Limit), "key %s", key)
				}
			})
			w := p
			if w.Window > 10*time.Millisecond {
				w.Window = 50 * time.Millisecond
			}
			t.Run(fmt.Sprintf("impl=%s/policy=%v/window=%v", name, p, w.Window), func(t *testing.T) {
				inst, err := im.New(w, impl.Options{})
				require.NoError(t, err)
				defer inst.Close()
				t0 := time.Now()
				first := drain(inst, "k", w.Limit)
				time.Sleep(w.Window / 2)
				passed := inst.Allow("k")
				if early := time.Since(t0); early < w.Window {
					assert.Equal(t, w.Limit, first, "a new key's burst")
					assert.False(t, passed, "refilled %v after its first call, within the window", early)
				} else {
					t.Logf("window not checked from below: %v passed before the check", early)
				}
				time.Sleep(w.Window + w.Window/4)
				assert.GreaterOrEqual(t, drain(inst, "k", w.Limit), w.Limit,
					"the whole limit passes again more than a window after the last admission")
			})
		}
	}
}

// drain calls key until it is denied, at most limit+1 times, and returns the
// calls admitted.
func drain(inst *impl.Instance, key string, limit int) int {
	n := 0
	for n <= limit && inst.Allow(key) {
		n++
	}
	return n
}
