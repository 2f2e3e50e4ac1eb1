package envoyrls

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a log sink that tests may read while the server writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchedServer returns a server of a copy of the example configuration,
// logging to the returned buffer, and the copy's directory.
func watchedServer(t *testing.T) (*Server, string, *lockedBuffer) {
	t.Helper()
	dir := copyDir(t, "testdata/example")
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	require.NoError(t, err)
	return s, dir, logs
}

// TestWatchDirUnreadable: a config directory that cannot be read (here a
// file that is a dangling symlink, as a half-swapped volume leaves) is logged
// once with the reason, the configuration in force stays, and once the
// directory can be read again it is loaded and that is logged too.
func TestWatchDirUnreadable(t *testing.T) {
	s, dir, logs := watchedServer(t)
	before := s.Config()
	loads := make(chan error, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchDir(ctx, dir, time.Millisecond, func(err error) { loads <- err })
	}()
	defer func() { cancel(); <-done }()
	next := func() error {
		t.Helper()
		select {
		case err := <-loads:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reload reported")
			return nil
		}
	}

	link := filepath.Join(dir, "dangling.yaml")
	require.NoError(t, os.Symlink(filepath.Join(dir, "missing"), link))
	err := next()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dangling.yaml")
	assert.Same(t, before, s.Config(), "the configuration in force stays")
	assert.Equal(t, 1, strings.Count(logs.String(), "config directory unreadable"), "logged, once: %s", logs)
	assert.Contains(t, logs.String(), "dangling.yaml", "the log names the file")

	require.NoError(t, os.Remove(link))
	for err = next(); err != nil; err = next() {
		assert.Contains(t, err.Error(), "dangling.yaml", "only the same failure, before the recovery")
	}
	assert.NotSame(t, before, s.Config(), "loaded again once readable")
	assert.Equal(t, 1, strings.Count(logs.String(), "config directory unreadable"), "logged once: %s", logs)
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"config loaded"`), "the recovery is logged: %s", logs)
}

// TestDirWatchPollReportsAFailureOnce: polls of a directory that stays
// unreadable report and log the failure once, not once per poll.
func TestDirWatchPollReportsAFailureOnce(t *testing.T) {
	s, dir, logs := watchedServer(t)
	var reports []error
	w := s.newDirWatch(dir, func(err error) { reports = append(reports, err) })
	w.poll()
	assert.Empty(t, reports, "nothing changed")

	require.NoError(t, os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling.yaml")))
	for range 5 {
		w.poll()
	}
	require.Len(t, reports, 1)
	require.Error(t, reports[0])
	assert.Equal(t, 1, strings.Count(logs.String(), "config directory unreadable"), "%s", logs)

	require.NoError(t, os.Remove(filepath.Join(dir, "dangling.yaml")))
	w.poll()
	w.poll()
	require.Len(t, reports, 2)
	assert.NoError(t, reports[1], "loaded again once readable, though its files are as before")
}

// TestDirWatchStartsFromWhatWasLoaded: a file changed between loading the
// directory and starting to watch it is loaded at the first poll, not
// missed until the next change.
func TestDirWatchStartsFromWhatWasLoaded(t *testing.T) {
	s, dir, _ := watchedServer(t)
	r, _ := s.Config().Match("mongo_cps", kv("database", "users"))
	require.NotNil(t, r)
	require.Equal(t, uint32(500), r.RequestsPerUnit)
	file := filepath.Join(dir, "mongo_cps.yaml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, bytes.Replace(data, []byte("requests_per_unit: 500"), []byte("requests_per_unit: 600"), 1), 0o644))

	var reports []error
	w := s.newDirWatch(dir, func(err error) { reports = append(reports, err) })
	w.poll()
	require.Equal(t, []error{nil}, reports, "the change is loaded")
	r, _ = s.Config().Match("mongo_cps", kv("database", "users"))
	require.NotNil(t, r)
	assert.Equal(t, uint32(600), r.RequestsPerUnit)
	w.poll()
	assert.Len(t, reports, 1, "and only once")
}

// TestWatchDirWithoutInterval: an interval of 0 or less watches nothing
// and returns, where a ticker would panic.
func TestWatchDirWithoutInterval(t *testing.T) {
	s, dir, _ := watchedServer(t)
	for _, d := range []time.Duration{0, -time.Second} {
		assert.NotPanics(t, func() { s.WatchDir(context.Background(), dir, d, nil) }, "interval %v", d)
	}
}
