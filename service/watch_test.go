package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// writeAtomically replaces the file at path by data in one rename, so that a
// watcher never reads half of it.
func writeAtomically(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(data), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// errorLog collects the errors a watcher reports.
type errorLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err.Error())
}

func (l *errorLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

func rulesWithAPI(limit int) string {
	return `{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1s"}],` +
		`"apis":{"x":[{"algorithm":"GCRA","limit":` + strconv.Itoa(limit) + `,"window":"1s"}]}}`
}

func TestWatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	writeAtomically(t, path, rulesWithAPI(4))
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	var log errorLog
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFile(ctx, path, 2*time.Millisecond, log.add)
	}()
	resolves := func(limit int) func() bool {
		return func() bool { return s.Resolve("u", "x") == cfg(hotlimit.GCRA, limit) }
	}
	wait := func(cond func() bool, msg string) {
		t.Helper()
		require.Eventually(t, cond, 5*time.Second, time.Millisecond, msg)
	}
	wait(resolves(4), "first load")
	require.Equal(t, 2, passes(s, "u", "y", 2))

	writeAtomically(t, path, rulesWithAPI(6))
	wait(resolves(6), "change applied")
	assert.Equal(t, 1, passes(s, "u", "y", 5), "unchanged default kept its state")

	writeAtomically(t, path, strings.Replace(rulesWithAPI(7), `"1s"}]}}`, `"1 s"}]}}`, 1))
	wait(func() bool { return len(log.get()) == 1 }, "bad rules reported")
	assert.Contains(t, log.get()[0], `apis["x"][0].window`)
	assert.Contains(t, log.get()[0], path)
	assert.Equal(t, cfg(hotlimit.GCRA, 6), s.Resolve("u", "x"), "bad rules change nothing")

	require.NoError(t, os.Remove(path))
	wait(func() bool { return len(log.get()) == 2 }, "missing file reported")
	assert.Contains(t, log.get()[1], "no such file")
	time.Sleep(20 * time.Millisecond) // many polls
	assert.Len(t, log.get(), 2, "reported once")

	writeAtomically(t, path, rulesWithAPI(8))
	wait(resolves(8), "applied after the file came back")

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchFile did not return after cancel")
	}
	writeAtomically(t, path, rulesWithAPI(9))
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, cfg(hotlimit.GCRA, 8), s.Resolve("u", "x"), "stopped watching")
	assert.Len(t, log.get(), 2)
}

func TestWatchFileStopsWithoutAFile(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	before := s.Rules()
	s.WatchFile(ctx, filepath.Join(t.TempDir(), "missing.json"), 0, nil) // nil onError: errors dropped
	assert.Equal(t, before, s.Rules())
}

// reloadLog collects the reloads a watcher reports.
type reloadLog struct {
	mu      sync.Mutex
	reloads []service.Reload
}

func (l *reloadLog) add(r service.Reload) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reloads = append(l.reloads, r)
}

func (l *reloadLog) get() []service.Reload {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]service.Reload(nil), l.reloads...)
}

func TestWatchFileWithReportsReloadsAndUnmatchedRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	writeAtomically(t, path, rulesWithAPI(4))
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	var reloads reloadLog
	var errs errorLog
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFileWith(ctx, path, service.WatchOptions{
			Interval: 2 * time.Millisecond, OnError: errs.add, OnReload: reloads.add,
			Routes: []string{"GET /pay", "x"},
		})
	}()
	wait := func(cond func() bool, msg string) {
		t.Helper()
		require.Eventually(t, cond, 5*time.Second, time.Millisecond, msg)
	}
	wait(func() bool { return len(reloads.get()) == 1 }, "first load reported")
	first := reloads.get()[0]
	assert.Equal(t, path, first.Path)
	assert.Equal(t, s.Rules(), first.Rules)
	assert.Empty(t, first.Unmatched, `api "x" is a route`)

	writeAtomically(t, path, `{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1s"}],`+
		`"apis":{"pay":[{"algorithm":"GCRA","limit":5,"window":"1s"}],"GET /pay":[{"algorithm":"GCRA","limit":5,"window":"1s"}]},`+
		`"pairs":[{"user":"u","api":"/pay","limits":[{"algorithm":"GCRA","limit":5,"window":"1s"}]}]}`)
	wait(func() bool { return len(reloads.get()) == 2 }, "change reported")
	assert.Equal(t, []string{"/pay", "pay"}, reloads.get()[1].Unmatched)

	writeAtomically(t, path, strings.Replace(rulesWithAPI(7), `"1s"}]}}`, `"1 s"}]}}`, 1))
	wait(func() bool { return len(errs.get()) == 1 }, "bad rules reported as an error")
	writeAtomically(t, path, rulesWithAPI(8))
	wait(func() bool { return len(reloads.get()) == 3 }, "the next good rules reported")
	assert.Len(t, reloads.get(), 3, "bad rules are no reload")
	cancel()
	<-done
}

func TestWatchFileReportsNoReloadForAnUnchangedRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	writeAtomically(t, path, rulesWithAPI(4))
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	reloads, stop := watchReloads(s, path)
	require.Eventually(t, func() bool { return len(reloads.get()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Nil(t, reloads.get()[0].Unmatched, "no routes, no check")
	writeAtomically(t, path, rulesWithAPI(4))
	writeAtomically(t, path, rulesWithAPI(5))
	require.Eventually(t, func() bool { return len(reloads.get()) == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, cfg(hotlimit.GCRA, 5), reloads.get()[1].Rules.APIs["x"][0])
	stop()
	assert.Len(t, reloads.get(), 2, "the unchanged rewrite reloaded nothing")
}

func TestNamedAndUnmatchedAPIs(t *testing.T) {
	one := service.Limits{cfg(hotlimit.GCRA, 5)}
	r := service.Rules{
		Default: one,
		Users:   map[string]service.Limits{"alice": one},
		APIs:    map[string]service.Limits{"GET /pay": one, "pay": one},
		Pairs:   map[service.Pair]service.Limits{{User: "bob", API: "GET /search"}: one, {User: "alice", API: "pay"}: one},
	}
	assert.Equal(t, []string{"GET /pay", "GET /search", "pay"}, r.NamedAPIs())
	assert.Equal(t, []string{"alice", "bob"}, r.NamedUsers())
	routes := []string{"GET /pay", "GET /search", "POST /login"}
	assert.Equal(t, []string{"pay"}, service.UnmatchedAPIs(r, routes))
	assert.Empty(t, service.UnmatchedAPIs(service.Rules{Default: one}, routes))
	s, err := service.NewFromRules(r)
	require.NoError(t, err)
	assert.Equal(t, []string{"pay"}, s.UnmatchedAPIs(routes))
}

// TestWatchFileReloadsARenameThatKeepsSizeAndTime replaces the file, in one
// rename, by one of the same size and modification time, as cp -p, rsync -t
// or an unpacked archive leave it: the watcher must see a different file.
func TestWatchFileReloadsARenameThatKeepsSizeAndTime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	old := time.Now().Add(-time.Hour) // well before the recent-write window
	require.NoError(t, os.WriteFile(path, []byte(rulesWithAPI(4)), 0o600))
	require.NoError(t, os.Chtimes(path, old, old))
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	reloads, stop := watchReloads(s, path)
	require.Eventually(t, func() bool { return len(reloads.get()) == 1 }, 5*time.Second, time.Millisecond)

	tmp := filepath.Join(dir, "rules.json.new")
	require.NoError(t, os.WriteFile(tmp, []byte(rulesWithAPI(5)), 0o600))
	require.NoError(t, os.Chtimes(tmp, old, old))
	require.NoError(t, os.Rename(tmp, path))
	require.Eventually(t, func() bool { return len(reloads.get()) == 2 }, 5*time.Second, time.Millisecond,
		"a renamed-in file of the same size and time is reloaded")
	assert.Equal(t, cfg(hotlimit.GCRA, 5), s.Rules().APIs["x"][0])
	stop()
}

// watchReloads runs s.WatchFileWith on path, polling every 2 ms, and logs
// each reload; stop ends the watch and waits for it to return.
func watchReloads(s *service.Service, path string) (*reloadLog, func()) {
	reloads := &reloadLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFileWith(ctx, path, service.WatchOptions{Interval: 2 * time.Millisecond, OnReload: reloads.add})
	}()
	return reloads, func() { cancel(); <-done }
}

// TestWatchFileNilContextRunsUntilClose watches a file under a nil context,
// which a caller may pass for "no deadline": the watcher loads the file and
// runs until the service is closed, instead of crashing the process on its
// goroutine.
func TestWatchFileNilContextRunsUntilClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"algorithm":"FixedWindow","limit":1,"window":"1h"}]}`), 0o600))
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Hour})
	require.NoError(t, err)
	reloaded := make(chan service.Reload, 1)
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		//lint:ignore SA1012 the test is that a nil context is refused
		s.WatchFileWith(nil, path, service.WatchOptions{Interval: time.Millisecond, OnReload: func(r service.Reload) { reloaded <- r }})
	}()
	select {
	case r := <-reloaded:
		assert.Equal(t, 1, r.Rules.Default[0].Limit)
	case p := <-done:
		t.Fatalf("the watcher returned before loading the file: %v", p)
	case <-time.After(30 * time.Second):
		t.Fatal("the file was not loaded")
	}
	require.NoError(t, s.Close())
	select {
	case p := <-done:
		assert.Nil(t, p, "the watcher panicked")
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not return after Close")
	}
}

// TestWatchFileReloadReplacesConfiguredRules: the watched file is the whole
// policy. A rule set by Configure* while the file is watched holds until the
// file changes, and is then gone with the rest of the rules in force.
func TestWatchFileReloadReplacesConfiguredRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	writeAtomically(t, path, rulesWithAPI(4))
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	reloads := make(chan service.Reload, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.WatchFileWith(ctx, path, service.WatchOptions{Interval: time.Millisecond, OnReload: func(r service.Reload) { reloads <- r }})
	next := func() {
		t.Helper()
		select {
		case <-reloads:
		case <-time.After(30 * time.Second):
			t.Fatal("no reload")
		}
	}
	next()
	require.NoError(t, s.ConfigureUser("alice", cfg(hotlimit.SlidingLog, 9)))
	assert.Equal(t, cfg(hotlimit.SlidingLog, 9), s.Resolve("alice", "y"), "the configured rule applies")

	writeAtomically(t, path, rulesWithAPI(6))
	next()
	assert.Equal(t, cfg(hotlimit.FixedWindow, 3), s.Resolve("alice", "y"), "the file's rules replaced it")
	assert.Nil(t, s.Rules().Users)
}

// TestWatchFileEmptyPathSaysSo: a path left empty (an unset flag or
// environment variable) is reported as such, not as the stat of nothing.
func TestWatchFileEmptyPathSaysSo(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	errs := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFile(ctx, "", time.Millisecond, func(err error) { errs <- err })
	}()
	select {
	case err := <-errs:
		assert.Equal(t, "service: watching rules: the path is empty; the rules in force stay", err.Error())
	case <-time.After(30 * time.Second):
		t.Fatal("no error reported")
	}
	cancel()
	<-done
}

// TestWatchFileErrorsSayTheRulesInForceStay: each error a watcher reports,
// rules that do not load and a file gone, says that the service keeps
// deciding by the rules it had, so that a log of it needs no manual. The
// test waits for each report itself, not for a time.
func TestWatchFileErrorsSayTheRulesInForceStay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	writeAtomically(t, path, rulesWithAPI(4))
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	ctx, cancel := context.WithCancel(context.Background())
	loaded, errs, done := make(chan struct{}), make(chan error), make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFileWith(ctx, path, service.WatchOptions{
			Interval: time.Millisecond,
			OnReload: func(service.Reload) {
				select {
				case loaded <- struct{}{}:
				case <-ctx.Done():
				}
			},
			OnError: func(err error) {
				select {
				case errs <- err:
				case <-ctx.Done():
				}
			},
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-loaded
	require.Equal(t, cfg(hotlimit.GCRA, 4), s.Resolve("u", "x"), "first load")

	writeAtomically(t, path, `{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1 s"}]}`)
	bad := <-errs
	require.NotErrorIs(t, bad, os.ErrNotExist, "the bad rules reported: %v", bad)
	require.NoError(t, os.Remove(path))
	gone := <-errs
	require.ErrorIs(t, gone, os.ErrNotExist, "the missing file reported: %v", gone)
	for _, e := range []error{bad, gone} {
		assert.True(t, strings.HasSuffix(e.Error(), "; the rules in force stay"), e.Error())
	}
	assert.Equal(t, cfg(hotlimit.GCRA, 4), s.Resolve("u", "x"), "as they say")
}
