package service

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestWatchFileRefusesAFileLargerThanTheBound: a path that names a file far
// larger than any rules (a log file, by mistake) is not read into memory:
// the error says so, the rules in force stay, and the file is reported
// once while it stays too large. Made small again, it is loaded.
func TestWatchFileRefusesAFileLargerThanTheBound(t *testing.T) {
	s, p, path := watchedService(t)
	require.Equal(t, 3, allows(s, "u", "y", 5))
	big := watchedB + strings.Repeat(" ", 16<<20) // valid rules, past the default bound
	require.NoError(t, os.WriteFile(path, []byte(big), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 1)
	assert.ErrorContains(t, p.errs[0], path)
	assert.ErrorContains(t, p.errs[0], "larger than")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules in force stay")
	assert.Zero(t, allows(s, "u", "y", 1), "with their state")
	require.NoError(t, os.WriteFile(path, []byte(big+" "), 0o600)) // still growing
	p.w.poll()
	assert.Len(t, p.errs, 1, "reported once")

	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.reloads, 2)
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
}

// TestWatchFileMaxSizeIsTheLargestFileRead: a file of exactly MaxSize
// bytes is read; one byte more is refused, whether the size is seen by
// the file's status or only by the read.
func TestWatchFileMaxSizeIsTheLargestFileRead(t *testing.T) {
	s, p, path := watchedService(t)
	p.w.maxSize = int64(len(watchedB))
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	require.Len(t, p.reloads, 2, "a file of MaxSize bytes is read")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)

	require.NoError(t, os.WriteFile(path, []byte(watchedA+" "), 0o600))
	p.w.poll()
	require.Len(t, p.errs, 1, "one byte more is refused")
	assert.ErrorContains(t, p.errs[0], fmt.Sprintf("larger than %d bytes", len(watchedB)))
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)

	_, err := readBounded(path, int64(len(watchedB)))
	assert.ErrorContains(t, err, "larger than", "the read alone refuses it too")
}

// TestWatchFileWithPassesMaxSize: WatchOptions.MaxSize bounds the file
// WatchFileWith reads.
func TestWatchFileWithPassesMaxSize(t *testing.T) {
	s, err := New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(watchedA), 0o600))
	errs := make(chan error, 1)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		s.WatchFileWith(ctx, path, WatchOptions{Interval: time.Hour, MaxSize: int64(len(watchedA) - 1),
			OnError: func(err error) { errs <- err }})
	}()
	err = <-errs
	cancel()
	<-done
	assert.ErrorContains(t, err, "larger than")
	assert.Equal(t, 1, s.Resolve("u", "x").Limit, "nothing installed")
}

// TestWatchFileMaxSizeOfTheLargestInt64ReadsTheFile: a MaxSize of
// math.MaxInt64, a bound no file reaches, reads the file as any other
// bound does: the read that stops one byte past the bound must not
// overflow into reading nothing, which would load an empty file.
func TestWatchFileMaxSizeOfTheLargestInt64ReadsTheFile(t *testing.T) {
	s, p, path := watchedService(t)
	p.w.maxSize = math.MaxInt64
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	p.w.poll()
	assert.Empty(t, p.errs)
	require.Len(t, p.reloads, 2, "the file is read whole")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)

	data, err := readBounded(path, math.MaxInt64)
	require.NoError(t, err)
	assert.Equal(t, watchedB, string(data))
}
