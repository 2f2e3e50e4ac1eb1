package service_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

var algorithms = []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog}

func cfg(a hotlimit.Algorithm, limit int) hotlimit.Config {
	return hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Second}
}

// frozen returns a clock option stuck at now, and the knob that moves it.
func frozen(now int64) (hotlimit.Option, *atomic.Int64) {
	var t atomic.Int64
	t.Store(now)
	return hotlimit.WithClock(t.Load), &t
}

func newService(t testing.TB, def hotlimit.Config) (*service.Service, *atomic.Int64) {
	clock, now := frozen(int64(time.Hour))
	s, err := service.New(def, clock)
	require.NoError(t, err)
	return s, now
}

// passes counts how many of n Allow calls pass.
func passes(s *service.Service, user, api string, n int) int {
	c := 0
	for range n {
		if s.Allow(user, api) {
			c++
		}
	}
	return c
}

func TestResolveMostSpecificWins(t *testing.T) {
	def, user, api, both := cfg(hotlimit.FixedWindow, 1), cfg(hotlimit.FixedWindow, 2), cfg(hotlimit.TokenBucket, 3), cfg(hotlimit.SlidingLog, 4)
	s, _ := newService(t, def)
	require.NoError(t, s.ConfigureUser("u", user))
	require.NoError(t, s.ConfigureAPI("a", api))
	require.NoError(t, s.ConfigureUserAPI("u", "a", both))

	for i, tc := range []struct {
		user, api string
		want      hotlimit.Config
	}{
		{"x", "y", def},
		{"u", "y", user},
		{"x", "a", api},
		{"u", "a", both},
	} {
		assert.Equal(t, tc.want, s.Resolve(tc.user, tc.api), "case %d", i)
		assert.Equal(t, tc.want.Limit, passes(s, tc.user, tc.api, 10), "case %d: passes", i)
	}
}

func TestPairsAreIndependentWhateverTheirBytes(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			s, _ := newService(t, cfg(a, 2))
			// Pairs whose naive concatenations collide.
			pairs := [][2]string{
				{"ab", "c"}, {"a", "bc"}, {"", "abc"}, {"abc", ""},
				{"a\x00", "b"}, {"a", "\x00b"}, {"\x01a", ""}, {"\x01", "a"},
				{"a:b", "c"}, {"a", "b:c"},
			}
			for i, p := range pairs {
				assert.Equal(t, 2, passes(s, p[0], p[1], 5), "pair %d %q", i, p)
			}
		})
	}
}

func TestConfigureRejectsBadConfigAndChangesNothing(t *testing.T) {
	def := cfg(hotlimit.FixedWindow, 3)
	s, _ := newService(t, def)
	require.NoError(t, s.ConfigureUser("u", cfg(hotlimit.TokenBucket, 5)))
	require.Equal(t, 1, passes(s, "u", "a", 1))

	bad := []struct {
		c     hotlimit.Config
		field string
	}{
		{hotlimit.Config{Algorithm: 0, Limit: 1, Window: time.Second}, "Algorithm"},
		{hotlimit.Config{Algorithm: 99, Limit: 1, Window: time.Second}, "Algorithm"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 0, Window: time.Second}, "Limit"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: -4, Window: time.Second}, "Limit"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: 0}, "Window"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 1, Window: -time.Second}, "Window"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 30, Window: time.Second}, "limit"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 1 << 30, Window: time.Second}, "limit"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1 << 30, Window: time.Second}, "limit"},
	}
	for i, tc := range bad {
		for j, configure := range []func() error{
			func() error { return s.ConfigureUser("u", tc.c) },
			func() error { return s.ConfigureAPI("a", tc.c) },
			func() error { return s.ConfigureUserAPI("u", "a", tc.c) },
		} {
			err := configure()
			require.Error(t, err, "case %d/%d", i, j)
			assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d/%d: %v", i, j, err)
			assert.Contains(t, err.Error(), tc.field, "case %d/%d", i, j)
		}
		_, err := service.New(tc.c)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d: New", i)
	}
	// Nothing changed: same rules, and the pair kept its state.
	assert.Equal(t, cfg(hotlimit.TokenBucket, 5), s.Resolve("u", "a"))
	assert.Equal(t, def, s.Resolve("v", "a"))
	assert.Equal(t, 4, passes(s, "u", "a", 10))
}

func TestReconfiguringKeepsUnchangedPairsState(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	require.Equal(t, 2, passes(s, "u", "a", 2))
	// Changing another user's rule publishes a new snapshot; u's policy is the
	// same, so it keeps its limiter and its count.
	require.NoError(t, s.ConfigureUser("v", cfg(hotlimit.TokenBucket, 9)))
	assert.Equal(t, 1, passes(s, "u", "a", 5))
	// A pair moved to a new policy starts fresh there.
	require.NoError(t, s.ConfigureUser("u", cfg(hotlimit.TokenBucket, 2)))
	assert.Equal(t, 2, passes(s, "u", "a", 5))
}

func TestTakePassesThrough(t *testing.T) {
	s, now := newService(t, cfg(hotlimit.FixedWindow, 3))
	d := s.Take("u", "a", 2)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: time.Second - time.Duration(now.Load()%int64(time.Second))}, d)
	d = s.Take("u", "a", 2)
	assert.False(t, d.Allowed)
	assert.Positive(t, d.RetryAfter)
	assert.Equal(t, hotlimit.Never, s.Take("u", "a", 4).RetryAfter)
	assert.False(t, s.Take("u", "a", -1).Allowed)
	assert.True(t, s.Take("u", "a", 0).Allowed)
	assert.Equal(t, 1, s.Take("u", "a", 0).Remaining)
}

func TestFrozenClockHammer(t *testing.T) {
	goroutines, calls := 32, 200
	if testing.Short() {
		calls = 50
	}
	for _, a := range algorithms {
		for _, limit := range []int{1, 2, 7, 100, 1000} {
			t.Run(cfg(a, limit).String(), func(t *testing.T) {
				s, _ := newService(t, cfg(a, limit))
				require.NoError(t, s.ConfigureAPI("other", cfg(a, limit+1)))
				var passed [2]atomic.Int64
				var wg sync.WaitGroup
				calls := max(calls, 4*(limit+1)/goroutines) // each api asked well past its limit
				for g := range goroutines {
					wg.Go(func() {
						for i := range calls {
							api := []string{"a", "other"}[(g+i)%2]
							if s.Allow("u", api) {
								passed[(g+i)%2].Add(1)
							}
						}
					})
				}
				wg.Go(func() { // a sweeper racing the traffic
					for range 20 {
						s.Sweep()
					}
				})
				wg.Wait()
				assert.EqualValues(t, limit, passed[0].Load())
				assert.EqualValues(t, limit+1, passed[1].Load())
			})
		}
	}
}

func TestConfigureWhileAllowing(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 1000000))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				s.Allow(string(rune('a'+g)), string(rune('a'+i%7)))
			}
		})
	}
	for i := range 200 {
		a := algorithms[i%3]
		require.NoError(t, s.ConfigureAPI(string(rune('a'+i%7)), cfg(a, 1000+i)))
		require.NoError(t, s.ConfigureUser(string(rune('a'+i%4)), cfg(a, 2000+i)))
	}
	stop.Store(true)
	wg.Wait()
	// The last rules are in force.
	assert.Equal(t, cfg(algorithms[199%3], 1199), s.Resolve("z", string(rune('a'+199%7))))
}

func TestSweepForgetsIdlePairsOnly(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			s, now := newService(t, cfg(a, 3))
			require.Equal(t, 3, passes(s, "idle", "a", 3))
			now.Add(int64(10 * time.Second))
			require.Equal(t, 2, passes(s, "busy", "a", 2))
			require.Equal(t, 2, s.Len())
			assert.Equal(t, 1, s.Sweep())
			assert.Equal(t, 1, s.Len())
			// Same decisions as if nothing had been swept.
			assert.Equal(t, 1, passes(s, "busy", "a", 5))
			assert.Equal(t, 3, passes(s, "idle", "a", 5))
		})
	}
}

func TestAllowDoesNotAllocate(t *testing.T) {
	for _, a := range algorithms {
		s, _ := newService(t, cfg(a, 1000))
		require.True(t, s.Allow("user", "api"))
		assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("user", "api") }), "%v", a)
	}
}

// TestTakePolicyNamesTheDecidingRule: TakePolicy returns the Config that
// decided, from the same rules, and allocates nothing on a known pair.
func TestTakePolicyNamesTheDecidingRule(t *testing.T) {
	def := cfg(hotlimit.FixedWindow, 3)
	s, _ := newService(t, def)
	search := cfg(hotlimit.TokenBucket, 5)
	require.NoError(t, s.ConfigureAPI("search", search))
	d, c := s.TakePolicy("alice", "search", 1)
	assert.True(t, d.Allowed)
	assert.Equal(t, 4, d.Remaining)
	assert.Equal(t, search, c)
	d, c = s.TakePolicy("alice", "home", 3)
	assert.Equal(t, def, c)
	assert.Zero(t, d.Remaining)
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.TakePolicy("alice", "search", 1) }))
	require.NoError(t, s.ConfigureAPI("search", def))
	_, c = s.TakePolicy("alice", "search", 1)
	assert.Equal(t, def, c, "a new rule is seen at once")
}
