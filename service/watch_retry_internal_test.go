package service

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestWatchFileReportsAFailingFactoryOnceWhateverItsErrorsSay: the factory
// keeps failing to build the new rules' limiter, each time with an error
// that names a changing value (the address a dial picked, a timestamp).
// The failure is reported once for the content, not at every retry, and
// the rules are installed once the factory recovers.
func TestWatchFileReportsAFailingFactoryOnceWhateverItsErrorsSay(t *testing.T) {
	var failing atomic.Bool
	var attempts atomic.Int64
	p, path := watchingWithFactory(t, func(c hotlimit.Config) error {
		if failing.Load() && c.Limit == 6 {
			return fmt.Errorf("dial tcp 10.0.0.%d:6379: connection refused", attempts.Add(1))
		}
		return nil
	})
	s := p.w.s

	failing.Store(true)
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	for range 4 {
		p.w.poll()
	}
	require.Equal(t, int64(4), attempts.Load(), "tried at every poll")
	require.Len(t, p.errs, 1, "reported once")
	assert.ErrorContains(t, p.errs[0], "10.0.0.1:6379")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules in force stay")

	failing.Store(false)
	p.w.poll()
	require.Len(t, p.reloads, 2, "installed once the factory recovers")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
	assert.Len(t, p.errs, 1)
}

// watchingWithFactory returns a watcher, polled once, of a rules file that
// holds watchedA, and the file's path, on a service (default FixedWindow 3
// per minute) whose factory fails with fail's error when it returns one.
func watchingWithFactory(t *testing.T, fail func(hotlimit.Config) error) (*polled, string) {
	t.Helper()
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if err := fail(c); err != nil {
			return nil, err
		}
		return NewLimiter(c, opts...)
	}
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p := newPolled(s, path)
	p.w.poll()
	require.Len(t, p.reloads, 1)
	return p, path
}

// TestWatchFileReportsAFactoryFailingAgainAfterItsRulesWereInstalled: the
// factory fails for a content, recovers and installs it, and later fails
// again for the same content, written anew after other rules: the last
// word was a reload, so this failure is reported, not taken for a retry of
// the first.
func TestWatchFileReportsAFactoryFailingAgainAfterItsRulesWereInstalled(t *testing.T) {
	var failing atomic.Bool
	p, path := watchingWithFactory(t, func(c hotlimit.Config) error {
		if failing.Load() && c.Limit == 6 {
			return fmt.Errorf("backend out of reach")
		}
		return nil
	})
	s := p.w.s

	failing.Store(true)
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 1, "the failure is reported")
	failing.Store(false)
	p.w.poll()
	require.Len(t, p.reloads, 2, "installed once the factory recovers")

	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p.w.poll()
	require.Len(t, p.reloads, 3)
	require.Equal(t, 4, s.Resolve("u", "x").Limit, "watchedB's limiter is dropped")

	failing.Store(true)
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 2, "the new failure is reported")
	assert.ErrorContains(t, p.errs[1], "backend out of reach")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules in force stay")
}
