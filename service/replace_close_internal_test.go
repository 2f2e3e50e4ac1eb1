package service

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestDroppedLimitersAreClosed: each way of installing rules (Replace, a
// Configure* method, a WatchFile reload) closes the limiters of the rules
// it replaced that no rule uses any more, so that a limiter on Redis gives
// its leases back at once, and closes none that the new rules keep; rules
// that fail to build close none in force; Close closes the rest, and no
// limiter is closed twice, including one a Replace after Close drops.
func TestDroppedLimitersAreClosed(t *testing.T) {
	var c closers
	var failing bool
	factory := func(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if failing && cfg.Limit == 13 {
			return nil, errors.New("backend out of reach")
		}
		return c.factory(cfg, opts...)
	}
	gcra := func(limit int) Limits {
		return Limits{{Algorithm: hotlimit.GCRA, Limit: limit, Window: time.Minute}}
	}
	def := Limits{{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}}
	s, err := New(def[0], hotlimit.WithFactory(factory))
	require.NoError(t, err)
	closedOf := func(limit int) int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for _, l := range c.each {
			if l.cfg.Limit == limit {
				n += l.closed
			}
		}
		return n
	}

	require.NoError(t, s.Replace(Rules{Default: def, APIs: map[string]Limits{"w": gcra(5)}}))
	assert.Equal(t, 2, c.open(), "the default's and w's")
	require.Equal(t, 3, allows(s, "u", "y", 5))

	require.NoError(t, s.Replace(Rules{Default: def, APIs: map[string]Limits{"x": gcra(6)}}))
	assert.Equal(t, 1, closedOf(5), "Replace closed w's limiter, which no rule uses")
	assert.Zero(t, closedOf(3), "nor the default's, which it kept")
	assert.Zero(t, allows(s, "u", "y", 1), "the default's keys kept their state")

	require.NoError(t, s.ConfigureAPI("x", gcra(7)[0]))
	assert.Equal(t, 1, closedOf(6), "ConfigureAPI closed x's old limiter")

	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}]}`), 0o600))
	p := newPolled(s, path)
	p.w.poll()
	require.Empty(t, p.errs)
	require.Len(t, p.reloads, 1)
	assert.Equal(t, 1, closedOf(7), "the reload closed x's limiter")
	assert.Equal(t, 1, c.open(), "only the default's is open")

	failing = true
	require.Error(t, s.Replace(Rules{Default: gcra(8), APIs: map[string]Limits{"z": gcra(13)}}))
	assert.Equal(t, 1, closedOf(8), "the limiter built for rules that failed is closed")
	assert.Zero(t, closedOf(3), "the default's, in force, is not")
	failing = false

	require.NoError(t, s.Replace(Rules{Default: def, APIs: map[string]Limits{"v": gcra(9)}}))
	require.NoError(t, s.Close())
	assert.Zero(t, c.open(), "Close closed the rest")
	require.NoError(t, s.Replace(Rules{Default: def}))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.each {
		assert.Equal(t, 1, l.closed, "limiter %v closed once", l.cfg)
	}
}

// lockProbe is a limiter whose Close records whether the service's lock
// was free as it ran.
type lockProbe struct {
	hotlimit.Limiter
	s        **Service
	unlocked []bool
}

func (l *lockProbe) Close() error {
	free := (*l.s).mu.TryLock()
	if free {
		(*l.s).mu.Unlock()
	}
	l.unlocked = append(l.unlocked, free)
	return nil
}

// TestDroppedLimitersCloseOutsideTheLock: a dropped limiter is closed after
// the Replace that dropped it released the service's lock, as closing one on
// Redis takes round trips (its leases given back) that must not hold up
// another Replace or Close.
func TestDroppedLimitersCloseOutsideTheLock(t *testing.T) {
	var s *Service
	probe := &lockProbe{s: &s}
	factory := func(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := NewLimiter(cfg, opts...)
		if err != nil || cfg.Limit != 5 {
			return l, err
		}
		probe.Limiter = l
		return probe, nil
	}
	def := Limits{{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}}
	five := Limits{{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute}}
	var err error
	s, err = New(def[0], hotlimit.WithFactory(factory))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}]}`), 0o600))
	for _, drop := range []func(){
		func() { require.NoError(t, s.Replace(Rules{Default: def})) },
		func() { require.NoError(t, s.ConfigureAPI("w", def[0])) },
		func() { newPolled(s, path).w.poll() }, // a first read installs
	} {
		require.NoError(t, s.Replace(Rules{Default: def, APIs: map[string]Limits{"w": five}}))
		drop()
	}
	assert.Equal(t, []bool{true, true, true}, probe.unlocked, "each Close ran with the lock free")
}
