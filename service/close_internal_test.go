package service

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// closes returns how many times c's limiters were closed.
func (c *closers) closes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.freed
}

// closedOnce asserts that every limiter c built was closed exactly once: a
// count of all closes would not tell a limiter closed twice from another
// left open.
func (c *closers) closedOnce(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.each {
		assert.Equal(t, 1, l.closed, "the limiter of %v is closed once", l.cfg)
	}
}

// TestTakeWithRacingCloseClosesTheLimiterItBuilds holds TakeWith's first
// use of a plan in the factory until Close has returned: Close ranged over
// the limiters before this one was stored. The limiter is closed all the
// same, once, and decides the call, as every limiter does after Close.
func TestTakeWithRacingCloseClosesTheLimiterItBuilds(t *testing.T) {
	var c closers
	plan := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	building, release := make(chan struct{}), make(chan struct{})
	factory := func(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if cfg.Limit == plan.Limit {
			close(building)
			<-release
		}
		return c.factory(cfg, opts...)
	}
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	type result struct {
		d   hotlimit.Decision
		err error
	}
	done := make(chan result)
	go func() {
		d, err := s.TakeWith("u", "x", plan, 1)
		done <- result{d, err}
	}()
	<-building
	require.NoError(t, s.Close())
	require.Equal(t, 1, c.closes(), "Close closed the rules' limiter; the plan's is still being built")
	close(release)
	r := <-done
	require.NoError(t, r.err)
	assert.True(t, r.d.Allowed, "decided by the plan's limiter")
	assert.Equal(t, 4, r.d.Remaining)
	assert.Zero(t, c.open(), "the limiter built during Close is closed")
	assert.Equal(t, 2, c.closes(), "each limiter once")
	c.closedOnce(t)
}

// TestTakeWithAfterCloseClosesTheLimiterItBuilds: a plan first used after
// Close gets a limiter that is closed as it is built, and decides with it;
// the next call of the plan uses the same limiter.
func TestTakeWithAfterCloseClosesTheLimiterItBuilds(t *testing.T) {
	var c closers
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(c.factory))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	plan := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute}
	for i, want := range []bool{true, true, false} {
		d, err := s.TakeWith("u", "x", plan, 1)
		require.NoError(t, err)
		assert.Equal(t, want, d.Allowed, "call %d", i)
	}
	assert.Zero(t, c.open(), "no limiter left open")
	assert.Equal(t, 2, c.closes(), "the rules' and the plan's, once each")
	c.closedOnce(t)
}

// TestReplaceAfterCloseClosesTheLimitersItBuilds: rules installed after
// Close decide, with limiters closed as they are built, so that none is
// left holding resources.
func TestReplaceAfterCloseClosesTheLimitersItBuilds(t *testing.T) {
	var c closers
	def := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	s, err := New(def, hotlimit.WithFactory(c.factory))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.ConfigureAPI("x", hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute}))
	assert.Equal(t, 2, allows(s, "u", "x", 5), "the new rule decides")
	assert.Zero(t, c.open(), "its limiter is closed")
	assert.Equal(t, 2, c.closes(), "each limiter once")
	c.closedOnce(t)
}

// TestCloseTwiceClosesEachLimiterOnce: a second Close closes nothing again,
// and returns no error.
func TestCloseTwiceClosesEachLimiterOnce(t *testing.T) {
	var c closers
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(c.factory))
	require.NoError(t, err)
	_, err = s.TakeWith("u", "x", hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute}, 1)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, 2, c.closes())
	require.NoError(t, s.Close())
	assert.Equal(t, 2, c.closes(), "closed once each")
	c.closedOnce(t)
}

// TestTakeWithFirstUseWaitsForNoReplace: a Replace whose factory is slow
// (a Redis dial) holds the service's writers' lock; a TakeWith building a
// plan's limiter meanwhile does not wait for it, nor do Allow and Take.
func TestTakeWithFirstUseWaitsForNoReplace(t *testing.T) {
	var c closers
	building, release := make(chan struct{}), make(chan struct{})
	factory := func(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if cfg.Limit == 7 {
			close(building)
			<-release
		}
		return c.factory(cfg, opts...)
	}
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	replaced := make(chan error)
	go func() {
		replaced <- s.ConfigureAPI("slow", hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Minute})
	}()
	<-building
	d, err := s.TakeWith("u", "x", hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute}, 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.True(t, s.Allow("u", "x"))
	assert.True(t, s.Take("u", "y", 1).Allowed)
	close(release)
	require.NoError(t, <-replaced)
	require.NoError(t, s.Close())
	assert.Zero(t, c.open())
	c.closedOnce(t)
}

// TestTakeWithFirstUsesRacingCloseCloseEachLimiterOnce: first uses of many
// plans, two callers each, race Close. Half the plans' factories return
// only once Close has started, so that every round has first uses that
// store their limiter during or after Close's listing (the race), some of
// them two at once for one plan (one limiter dropped) as the scheduler
// has it; the other half race freely. Every limiter built is closed exactly once, kept
// or dropped, listed by Close or built after it.
func TestTakeWithFirstUsesRacingCloseCloseEachLimiterOnce(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		var c closers
		var s *Service
		var late atomic.Int64
		factory := func(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
			if cfg.Limit >= 10 && cfg.Limit%2 == 1 {
				<-s.closed // built once Close has started
				late.Add(1)
			}
			return c.factory(cfg, opts...)
		}
		s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(factory))
		require.NoError(t, err)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 16 {
			plan := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10 + i/2, Window: time.Minute}
			wg.Go(func() {
				<-start
				_, err := s.TakeWith("u", "x", plan, 1)
				assert.NoError(t, err)
			})
		}
		wg.Go(func() {
			<-start
			assert.NoError(t, s.Close())
		})
		close(start)
		wg.Wait()
		require.GreaterOrEqual(t, late.Load(), int64(4), "round %d: each odd plan was built after Close began", round)
		c.mu.Lock()
		built, freed := c.built, c.freed
		c.mu.Unlock()
		require.Equal(t, built, freed, "round %d: as many closes as limiters", round)
		c.closedOnce(t)
	}
}
