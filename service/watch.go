package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"time"
)

// recentWrite is how recent a file's modification time must be for WatchFile
// to read the file even though its size and time look unchanged: a file
// system with a coarse clock can give two writes in a row the same time.
const recentWrite = 2 * time.Second

// WatchFile keeps the service's rules equal to the JSON rules in the file at
// path (see [LoadRules]) until ctx is done, then returns; run it on its own
// goroutine. It reads the file at once, then checks it every interval: when
// its size or modification time changed (or it was modified in the last
// couple of seconds, which coarse file-system clocks cannot tell apart) it
// reads it, and when the content's hash differs from the last content read
// it loads the rules and calls [Service.Replace]. An unchanged rewrite, such
// as a touch, changes nothing, and pairs whose rule is unchanged keep their
// state.
//
// A file that cannot be read, or that holds invalid rules, leaves the rules
// in force as they are; the error goes to onError (unless nil), once until
// something changes, and the next change is tried again. interval <= 0 means
// one second.
func (s *Service) WatchFile(ctx context.Context, path string, interval time.Duration, onError func(error)) {
	if interval <= 0 {
		interval = time.Second
	}
	w := watcher{s: s, path: path, onError: onError}
	w.poll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.poll()
		}
	}
}

// watcher is the state of one WatchFile loop; only its goroutine touches it.
type watcher struct {
	s       *Service
	path    string
	onError func(error)

	stat    os.FileInfo // last successful stat, nil before
	sum     [sha256.Size]byte
	read    bool   // whether sum holds the hash of some content read
	lastErr string // the file's access error reported last, "" once read
}

// poll checks the file once and replaces the rules if its content changed.
func (w *watcher) poll() {
	fi, err := os.Stat(w.path)
	if err != nil {
		w.failAccess(err)
		return
	}
	if w.stat != nil && w.read && fi.Size() == w.stat.Size() && fi.ModTime().Equal(w.stat.ModTime()) &&
		time.Since(fi.ModTime()) > recentWrite {
		return
	}
	w.stat = fi
	data, err := os.ReadFile(w.path)
	if err != nil {
		w.read = false
		w.failAccess(err)
		return
	}
	w.lastErr = ""
	sum := sha256.Sum256(data)
	if w.read && sum == w.sum {
		return
	}
	w.sum, w.read = sum, true
	rules, err := LoadRules(bytes.NewReader(data))
	if err == nil {
		err = w.s.Replace(rules)
	}
	if err != nil && w.onError != nil {
		// Once per content: the same content is not loaded again.
		w.onError(fmt.Errorf("%w (in %s)", err, w.path))
	}
}

// failAccess reports an error reaching the file, unless it is the one
// reported last: a missing file is reported once, not at every poll.
func (w *watcher) failAccess(err error) {
	err = fmt.Errorf("service: watching rules: %w", err)
	if err.Error() == w.lastErr {
		return
	}
	w.lastErr = err.Error()
	if w.onError != nil {
		w.onError(err)
	}
}
