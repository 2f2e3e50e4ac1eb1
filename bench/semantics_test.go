package bench

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
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

// admissions runs the sequence on a new instance of im under p and returns
// the calls admitted in each phase.
func admissions(t *testing.T, im impl.Impl, p impl.Policy, steps []step) []int {
	t.Helper()
	var now atomic.Int64
	now.Store(int64(time.Hour)) // any instant
	inst, err := im.New(p, impl.Options{Clock: now.Load})
	require.NoError(t, err, "impl=%s policy %v", im.Name, p)
	defer inst.Close()
	got := make([]int, len(steps))
	for i, s := range steps {
		switch {
		case s.full:
			now.Add(int64(p.Window))
		default:
			now.Add(int64(s.tokens*float64(p.Window)/float64(p.Limit) + 0.5))
		}
		for inst.Allow(s.key) {
			got[i]++
			require.LessOrEqual(t, got[i], p.Limit, "impl=%s policy %v phase %d: more than the limit at once", im.Name, p, i)
		}
	}
	return got
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

// TestPeersWithoutAClockBurstTheLimit: go-limiter and ulule read the real
// clock, so only their burst can be checked exactly: under each limit the
// benchmarks use, with a window of an hour that does not pass during the test,
// a new key passes exactly the limit, and another key is independent.
func TestPeersWithoutAClockBurstTheLimit(t *testing.T) {
	for _, name := range []string{"golimiter", "ulule"} {
		im, ok := impl.ByName(name)
		require.True(t, ok)
		require.False(t, im.Clock, "impl=%s would be in TestPeersDecideAsTheirCounterpart", name)
		for _, p := range benchPolicies(im) {
			if p.Limit > 1<<16 {
				continue // go-limiter's never-ending policy on one hot key
			}
			p.Window = time.Hour
			inst, err := im.New(p, impl.Options{})
			require.NoError(t, err)
			for _, key := range []string{"a", "b"} {
				n := 0
				for inst.Allow(key) && n <= p.Limit {
					n++
				}
				assert.Equal(t, p.Limit, n, "impl=%s limit %d key %s", name, p.Limit, key)
			}
			inst.Close()
		}
	}
}
