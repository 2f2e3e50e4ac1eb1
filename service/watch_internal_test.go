package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// polled is a watcher driven poll by poll, with what it reported: each
// step is one poll, so no interleaving depends on a ticker.
type polled struct {
	w       *watcher
	errs    []error
	reloads []Reload
}

func newPolled(s *Service, path string) *polled {
	p := &polled{}
	p.w = &watcher{s: s, path: path,
		onError:  func(err error) { p.errs = append(p.errs, err) },
		onReload: func(r Reload) { p.reloads = append(p.reloads, r) }}
	return p
}

// watchedRules are two rules files: the default is a fixed window of 3
// per minute in both, the API "x" changes from 4 to 6 per minute.
const (
	watchedA = `{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}],"apis":{"x":[{"algorithm":"GCRA","limit":4,"window":"1m0s"}]}}`
	watchedB = `{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}],"apis":{"x":[{"algorithm":"GCRA","limit":6,"window":"1m0s"}]}}`
	// watchedBad names no algorithm the service knows.
	watchedBad = `{"default":[{"algorithm":"Leaky","limit":3,"window":"1m0s"}]}`
)

// watchedService returns a service under a frozen clock watching a file
// of watchedA, loaded by a first poll.
func watchedService(t *testing.T) (*Service, *polled, string) {
	t.Helper()
	var now atomic.Int64
	now.Store(int64(time.Hour))
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p := newPolled(s, path)
	p.w.poll()
	require.Empty(t, p.errs)
	require.Len(t, p.reloads, 1)
	return s, p, path
}

// allows counts how many of n Allow calls of (user, api) pass.
func allows(s *Service, user, api string, n int) int {
	c := 0
	for range n {
		if s.Allow(user, api) {
			c++
		}
	}
	return c
}

// TestWatchFileTruncatedThenRewritten: a poll that lands between a
// truncation and the rewrite reads an empty file: the error is reported,
// the rules in force stay, and a pair that spent its quota is still at its
// limit. The rewrite, with a changed API rule, is then loaded; the default
// rule, unchanged, keeps its state: no fresh window for anyone.
func TestWatchFileTruncatedThenRewritten(t *testing.T) {
	s, p, path := watchedService(t)
	require.Equal(t, 3, allows(s, "u", "y", 5), "the default's quota")
	before := s.Rules()

	require.NoError(t, os.Truncate(path, 0))
	p.w.poll()
	require.Len(t, p.errs, 1, "the empty file is reported")
	assert.ErrorIs(t, p.errs[0], hotlimit.ErrInvalidConfig)
	assert.Equal(t, before, s.Rules(), "the rules in force stay")
	assert.Zero(t, allows(s, "u", "y", 1), "still at its limit")

	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.reloads, 2, "the rewrite is loaded")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
	assert.Zero(t, allows(s, "u", "y", 1), "the unchanged default kept its state")
	assert.Equal(t, 6, allows(s, "u", "x", 10), "the changed rule starts afresh")
	assert.Len(t, p.errs, 1)
}

// TestWatchFileDeletedAndRecreated: a poll of a deleted file reports it
// missing and keeps the rules; the file recreated with the same rules is
// read again, and the pairs keep their state.
func TestWatchFileDeletedAndRecreated(t *testing.T) {
	s, p, path := watchedService(t)
	require.Equal(t, 4, allows(s, "u", "x", 5))
	require.NoError(t, os.Remove(path))
	p.w.poll()
	require.Len(t, p.errs, 1)
	assert.ErrorIs(t, p.errs[0], os.ErrNotExist)
	p.w.poll()
	assert.Len(t, p.errs, 1, "reported once")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules stay")

	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p.w.poll()
	assert.Len(t, p.errs, 1)
	assert.Zero(t, allows(s, "u", "x", 1), "the same rules: the pair is still at its limit")

	// Deleted again: the last word was that it is back, so this is news.
	require.NoError(t, os.Remove(path))
	p.w.poll()
	require.Len(t, p.errs, 2, "deleted again: reported again")
	assert.ErrorIs(t, p.errs[1], os.ErrNotExist)
}

// TestWatchFileReportsAnInvalidFileRecreatedAfterItWasDeleted: the file
// holds invalid rules (reported), is deleted (reported missing), then
// comes back with the same invalid rules. The last word the watcher gave
// was that the file is missing; that it is back and invalid must be said
// too, or the operator believes the file is still to be written.
func TestWatchFileReportsAnInvalidFileRecreatedAfterItWasDeleted(t *testing.T) {
	s, p, path := watchedService(t)
	require.NoError(t, os.WriteFile(path, []byte(watchedBad), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 1)
	assert.ErrorIs(t, p.errs[0], hotlimit.ErrInvalidConfig)

	require.NoError(t, os.Remove(path))
	p.w.poll()
	require.Len(t, p.errs, 2)
	assert.ErrorIs(t, p.errs[1], os.ErrNotExist)

	require.NoError(t, os.WriteFile(path, []byte(watchedBad), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 3, "the invalid file back is reported again")
	assert.ErrorIs(t, p.errs[2], hotlimit.ErrInvalidConfig)
	assert.Contains(t, p.errs[2].Error(), "Leaky")
	p.w.poll()
	assert.Len(t, p.errs, 3, "once")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules in force stay throughout")
}

// TestWatchFileRecoveryFromAMissingFileIsReported: a file that goes
// missing is reported; when it comes back with the rules in force, the
// recovery is reported as a reload (nothing changes: the pairs keep their
// state), so that the last word is not that the file is missing.
func TestWatchFileRecoveryFromAMissingFileIsReported(t *testing.T) {
	s, p, path := watchedService(t)
	require.Equal(t, 3, allows(s, "u", "y", 5))
	require.NoError(t, os.Remove(path))
	p.w.poll()
	require.Len(t, p.errs, 1)
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p.w.poll()
	assert.Len(t, p.errs, 1)
	require.Len(t, p.reloads, 2, "the recovery is reported")
	assert.Equal(t, path, p.reloads[1].Path)
	assert.Zero(t, allows(s, "u", "y", 1), "the pair kept its state")
	p.w.poll()
	assert.Len(t, p.reloads, 2, "once")
}

// TestWatchFileMadeInvalidKeepsTheRulesAndState: a file made invalid is
// reported once, with the file named; the rules in force and their state
// stay; the file made valid again (as it was) is loaded again.
func TestWatchFileMadeInvalidKeepsTheRulesAndState(t *testing.T) {
	s, p, path := watchedService(t)
	require.Equal(t, 3, allows(s, "u", "y", 5))
	require.NoError(t, os.WriteFile(path, []byte(watchedBad), 0o600))
	assert.NotPanics(t, p.w.poll)
	require.Len(t, p.errs, 1)
	assert.Contains(t, p.errs[0].Error(), path)
	p.w.poll()
	assert.Len(t, p.errs, 1, "once")
	assert.Zero(t, allows(s, "u", "y", 1), "the rules in force stay, with their state")

	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p.w.poll()
	assert.Len(t, p.reloads, 2)
	assert.Zero(t, allows(s, "u", "y", 1), "the same rules again: still at the limit")
}

// closers is a factory of in-memory limiters that hold a resource, as
// redislimit's do: each must be closed.
type closers struct {
	mu           sync.Mutex
	built, freed int
	// each holds every limiter built, with how many times it was closed.
	each []*closingLimiter
}

type closingLimiter struct {
	hotlimit.Limiter
	c      *closers
	cfg    hotlimit.Config
	closed int // guarded by c.mu
}

func (l *closingLimiter) Close() error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.freed++
	l.closed++
	return nil
}

func (c *closers) factory(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	l, err := NewLimiter(cfg, opts...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.built++
	cl := &closingLimiter{Limiter: l, c: c, cfg: cfg}
	c.each = append(c.each, cl)
	return cl, nil
}

func (c *closers) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built - c.freed
}

// TestCloseStopsWatchFile: Close ends a WatchFile of the service, which
// would otherwise poll forever (its context here never ends) and install
// rules whose new limiters nothing closes any more.
func TestCloseStopsWatchFile(t *testing.T) {
	var c closers
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(c.factory)) // watchedA's default: no limiter dropped
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	loaded := make(chan struct{}, 1)
	done := make(chan struct{})
	base := runtime.NumGoroutine()
	go func() {
		defer close(done)
		s.WatchFileWith(context.Background(), path, WatchOptions{Interval: time.Millisecond,
			OnReload: func(Reload) { loaded <- struct{}{} }})
	}()
	<-loaded
	require.NoError(t, s.Close())
	assert.Zero(t, c.open(), "Close closed the limiters in force")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WatchFile still running after Close")
	}
	// done is closed as the goroutine returns: let it finish returning.
	// (Not assert.Eventually, which runs the condition on a goroutine.)
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base, "no goroutine left")
}

// TestWatchFileInstallsNothingAfterClose: a poll that finds a change
// after Close (one under way when Close came) installs nothing: every
// limiter built stays closed.
func TestWatchFileInstallsNothingAfterClose(t *testing.T) {
	var c closers
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(c.factory)) // watchedA's default: no limiter dropped
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	p := newPolled(s, path)
	p.w.poll()
	require.Len(t, p.reloads, 1)
	require.NoError(t, s.Close())
	require.Zero(t, c.open())

	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	assert.Zero(t, c.open(), "no limiter built after Close")
	assert.Len(t, p.reloads, 1, "nothing installed")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit)
}

// TestWatchFileWithAnEndedContextInstallsNothing: a WatchFile whose
// context has already ended returns without loading the file: the rules
// in force stay, and nothing is reported.
func TestWatchFileWithAnEndedContextInstallsNothing(t *testing.T) {
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute})
	require.NoError(t, err)
	before := s.Rules()
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var heard []string
	s.WatchFileWith(ctx, path, WatchOptions{Interval: time.Hour,
		OnError:  func(err error) { heard = append(heard, err.Error()) },
		OnReload: func(r Reload) { heard = append(heard, "reload "+r.Path) }})
	assert.Equal(t, before, s.Rules())
	assert.Empty(t, heard)
}

// TestWatchFileRenamedOverWithTheSameSizeAndTime: a file renamed over the
// path with the same size and modification time as the one read last,
// both older than any coarse clock's doubt, is read, as another file; the
// changed API rule is installed, and the unchanged default keeps its state.
func TestWatchFileRenamedOverWithTheSameSizeAndTime(t *testing.T) {
	require.Len(t, watchedB, len(watchedA))
	old := time.Now().Add(-time.Hour)
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithClock(func() int64 { return int64(time.Hour) }))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	require.NoError(t, os.Chtimes(path, old, old))
	p := newPolled(s, path)
	p.w.poll()
	require.Len(t, p.reloads, 1)
	require.Equal(t, 3, allows(s, "u", "y", 5))
	p.w.poll()
	require.Len(t, p.reloads, 1, "unchanged")

	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(watchedB), 0o600))
	require.NoError(t, os.Chtimes(tmp, old, old))
	require.NoError(t, os.Rename(tmp, path))
	p.w.poll()
	require.Len(t, p.reloads, 2, "the file renamed over is read")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
	assert.Zero(t, allows(s, "u", "y", 1), "the unchanged default kept its state")
	assert.Empty(t, p.errs)
}

// TestWatchFileRewriteWithinTheReadsClockTickIsLoaded: a file system whose
// clock is coarse gives a write the same time as the write before it, when
// both land in one tick. A poll that read the first while that tick was
// still running cannot know whether a second write followed: the next
// poll, however much later (an interval of 5s, as the README sets), must
// read the file again, and loads the second write (here of the same size,
// so only the content tells). The file's change time is its modification
// time here, as where the watcher reads no status change time; on Linux
// the status change time has ticks too.
func TestWatchFileRewriteWithinTheReadsClockTickIsLoaded(t *testing.T) {
	require.Len(t, watchedB, len(watchedA))
	s, p, path := watchedService(t)
	tick := time.Now().Add(-time.Hour).Truncate(time.Second) // the coarse clock's reading of both writes
	require.NoError(t, os.Chtimes(path, tick, tick))
	now := tick.Add(500 * time.Millisecond)
	p.w.now = func() time.Time { return now }
	p.w.changed = func(fi os.FileInfo) time.Time { return fi.ModTime() }
	p.w.poll() // another modification time: read again, within the tick
	require.Len(t, p.reloads, 1, "the same content: nothing to install")

	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600)) // in place: the same file
	require.NoError(t, os.Chtimes(path, tick, tick))                // in the same tick
	now = tick.Add(5 * time.Second)
	p.w.poll()
	require.Len(t, p.reloads, 2, "the second write is loaded")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
	assert.Empty(t, p.errs)
}

// TestWatchFileRetriesRulesAFactoryFailedToBuild: new rules are valid, but
// the factory cannot build one of their limiters for a while (its backend
// out of reach). The failure is reported once, the rules in force stay,
// and once the factory recovers the same, unchanged file is installed: a
// deployment during an outage is not lost until someone edits the file.
func TestWatchFileRetriesRulesAFactoryFailedToBuild(t *testing.T) {
	var failing atomic.Bool
	p, path := watchingWithFactory(t, func(hotlimit.Config) error {
		if failing.Load() {
			return errors.New("backend out of reach")
		}
		return nil
	})
	s := p.w.s

	failing.Store(true)
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 1, "the failure is reported")
	assert.ErrorContains(t, p.errs[0], "backend out of reach")
	assert.Contains(t, p.errs[0].Error(), path)
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules in force stay")
	p.w.poll()
	assert.Len(t, p.errs, 1, "reported once")

	// Gone and back, still failing: the last word was that it is
	// missing, so the failure is reported again.
	require.NoError(t, os.Remove(path))
	p.w.poll()
	require.Len(t, p.errs, 2)
	assert.ErrorIs(t, p.errs[1], os.ErrNotExist)
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 3, "the failure is reported again")
	assert.ErrorContains(t, p.errs[2], "backend out of reach")

	failing.Store(false)
	p.w.poll()
	require.Len(t, p.reloads, 2, "installed once the factory recovers")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
	p.w.poll()
	assert.Len(t, p.reloads, 2, "then left alone")
	assert.Len(t, p.errs, 3)
}

// TestWatchFileDoesNotRetryRulesAFactoryRejects: a factory's own range
// check wraps hotlimit.ErrInvalidConfig: the content is invalid for it,
// reported once, and not tried again until the file changes.
func TestWatchFileDoesNotRetryRulesAFactoryRejects(t *testing.T) {
	var builds atomic.Int64
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		builds.Add(1)
		if c.Limit == 6 {
			return nil, fmt.Errorf("limit 6 out of range: %w", hotlimit.ErrInvalidConfig)
		}
		return NewLimiter(c, opts...)
	}
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p := newPolled(s, path)
	p.w.poll()
	require.Len(t, p.errs, 1)
	assert.ErrorIs(t, p.errs[0], hotlimit.ErrInvalidConfig)
	before := builds.Load()
	p.w.poll()
	p.w.poll()
	assert.Equal(t, before, builds.Load(), "not tried again")
	assert.Len(t, p.errs, 1)
}

// TestWatchFileMetadataChangesInstallNothing: a chmod, a hard link and a
// touch change the file's status change time, not its content. The file is
// read again (within the change's tick, at every poll) and nothing else
// happens: no reload, no error, the snapshot in force stays the same one,
// and every pair keeps its state.
func TestWatchFileMetadataChangesInstallNothing(t *testing.T) {
	s, p, path := watchedService(t)
	require.Equal(t, 3, allows(s, "u", "y", 5))
	require.Equal(t, 4, allows(s, "u", "x", 5))
	inForce := s.rules.Load()

	require.NoError(t, os.Chmod(path, 0o640))
	p.w.poll()
	require.NoError(t, os.Link(path, path+".link"))
	p.w.poll()
	now := time.Now()
	require.NoError(t, os.Chtimes(path, now, now))
	p.w.poll()
	p.w.poll() // within the change's tick: read again
	p.w.now = func() time.Time { return time.Now().Add(time.Hour) }
	p.w.poll() // long after: left alone
	p.w.poll()

	assert.Len(t, p.reloads, 1, "no reload")
	assert.Empty(t, p.errs)
	assert.Same(t, inForce, s.rules.Load(), "nothing installed")
	assert.Zero(t, allows(s, "u", "y", 1), "the default kept its state")
	assert.Zero(t, allows(s, "u", "x", 1), "the API rule kept its state")
}

// TestWatchFileRetriesLeaveNoLimiterOpenAndKeepTheState: new rules hold two
// new limits, the factory failing for one of them. Each poll retries them:
// the limiter built for the other limit is closed every time, the failure is
// reported once, and the rules in force keep deciding with their state. Once
// the factory recovers the rules are installed; the unchanged default keeps
// its state, and Close closes every limiter in force.
func TestWatchFileRetriesLeaveNoLimiterOpenAndKeepTheState(t *testing.T) {
	var c closers
	var failing atomic.Bool
	factory := func(cfg hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if failing.Load() && cfg.Limit == 6 {
			return nil, errors.New("backend out of reach")
		}
		return c.factory(cfg, opts...)
	}
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.Equal(t, 3, allows(s, "u", "y", 5))
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}],`+
		`"apis":{"w":[{"algorithm":"GCRA","limit":5,"window":"1m0s"}],"x":[{"algorithm":"GCRA","limit":6,"window":"1m0s"}]}}`), 0o600))
	failing.Store(true)
	p := newPolled(s, path)
	for range 5 {
		p.w.poll()
	}
	require.Len(t, p.errs, 1, "reported once")
	assert.ErrorContains(t, p.errs[0], "backend out of reach")
	assert.Greater(t, c.built, 1, "the other limit's limiter was built at each try")
	assert.Equal(t, 1, c.open(), "only the default's limiter is open")
	assert.Zero(t, allows(s, "u", "y", 1), "the rules in force kept their state")

	failing.Store(false)
	p.w.poll()
	require.Len(t, p.reloads, 1, "installed once the factory recovers")
	assert.Equal(t, 3, c.open(), "the default's, w's and x's")
	assert.Zero(t, allows(s, "u", "y", 1), "the unchanged default kept its state")
	require.NoError(t, s.Close())
	assert.Zero(t, c.open())
}
