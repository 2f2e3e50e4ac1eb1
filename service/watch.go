package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/hotlimit/hotlimit"
)

// recentWrite is how long after a file's modification time WatchFile must
// have read it for the file to be left alone while its size and time look
// unchanged: a file system with a coarse clock can give two writes in a row
// the same time, and a read between them sees the first only.
const recentWrite = 2 * time.Second

// WatchFile keeps the service's rules equal to the JSON rules in the file at
// path (see [LoadRules]) until ctx is done or the service is closed (see
// [Service.Close]), then returns (at once, having read nothing, when it is
// already); run it on its own goroutine. It reads the file at once, then
// checks it every interval: when
// it is another file than the one read last (one renamed over the path), or
// its size, modification time or (on Linux and macOS) status change time
// changed (or it was read last within a couple of seconds of that change,
// whose time a coarse file-system clock gives a later write too), it reads
// it, and when the content's hash differs from the last content read
// it loads the rules and calls [Service.Replace]. An unchanged rewrite, such
// as a touch, changes nothing, and pairs whose rule is unchanged keep their
// state. The file is the whole policy: rules set meanwhile by
// [Service.ConfigureUser] (or the other Configure methods) or
// [Service.Replace] hold until the file next changes, and are then replaced
// by the file's.
//
// A file that cannot be read, that is not a regular file (a named pipe, a
// device, a directory; a symbolic link is followed), that is larger than
// [DefaultMaxRulesSize] (a log file named by mistake would be read into
// memory whole; [WatchOptions].MaxSize sets another bound), or that holds
// invalid rules leaves the rules in force as they are; the error goes to
// onError (unless nil), once until something changes, and the next change is
// tried again. Valid rules whose
// limiters a factory (see [hotlimit.WithFactory]) failed to build, with an
// error that does not wrap hotlimit.ErrInvalidConfig, are tried again at
// every check until they are installed, the first failure reported once for
// that content, whatever the retries' errors say (an address or a time in
// them may change at every try): the next word is the reload that installs
// them, or another error. A file that could
// not be reached (missing, unreadable) is loaded again once it can be, even
// as it was, and the outcome reported (its error, or a reload that keeps
// every pair's state), so that the last report is never a stale "missing".
// interval <= 0 means one second. A nil ctx is never done: the loop then
// ends when the service is closed.
//
// WatchFile is WatchFileWith with the interval and onError as options; see
// it to hear of successful reloads, and of rules that name no route.
func (s *Service) WatchFile(ctx context.Context, path string, interval time.Duration, onError func(error)) {
	s.WatchFileWith(ctx, path, WatchOptions{Interval: interval, OnError: onError})
}

// WatchOptions configures [Service.WatchFileWith]. The zero value polls every
// second and reports nothing.
type WatchOptions struct {
	// Interval is how often the file is checked; <= 0 means one second.
	Interval time.Duration
	// OnError, unless nil, hears of a file that cannot be read, holds
	// invalid rules, or holds rules whose limiters the factory failed to
	// build (the rules in force then stay, as the error's last words say),
	// once until something changes.
	OnError func(error)
	// OnReload, unless nil, hears of every rules the watcher installed: at
	// the first read, whenever the content changed, and when the file can
	// be read again after it could not (see [Service.WatchFile]). Log them with
	// Reload.Unmatched, the rules that no route can match.
	OnReload func(Reload)
	// Routes, when not nil, are the APIs requests are made to, such as the
	// patterns of an http.ServeMux (what httplimit.RoutePattern reports):
	// each Reload lists the rules' APIs that are none of them in Unmatched.
	Routes []string
	// MaxSize is the largest file, in bytes, that is read; <= 0 means
	// DefaultMaxRulesSize. A larger file is an error, reported as one
	// that cannot be read: the rules in force stay.
	MaxSize int64
}

// DefaultMaxRulesSize is the largest rules file [Service.WatchFile] reads
// unless [WatchOptions].MaxSize says otherwise: 16 MiB, some hundred
// thousand rules, far more than a policy written by hand, and far less than
// a log file that a mistaken path names.
const DefaultMaxRulesSize = 16 << 20

// Reload is one successful (re)load of a watched rules file.
type Reload struct {
	// Path is the file's path.
	Path string
	// Rules are the rules now in force.
	Rules Rules
	// Unmatched lists the APIs the rules name that are none of
	// WatchOptions.Routes (see [UnmatchedAPIs]): rules that never apply, such
	// as one for "pay" when the routes are "GET /pay". Nil when no Routes
	// were given.
	Unmatched []string
}

// WatchFileWith is [Service.WatchFile] with options: a callback for
// successful reloads, so that they can be logged, and the routes that the
// rules' APIs are checked against at each reload. On a nil or zero Service,
// which [New] did not make, it tells OnError that it takes no rules (see
// [Service.Replace]) and returns at once.
func (s *Service) WatchFileWith(ctx context.Context, path string, opts WatchOptions) {
	if !s.Built() { // it takes no rules: say so once, rather than poll for ever
		if opts.OnError != nil {
			opts.OnError(errNotBuilt)
		}
		return
	}
	if ctx == nil {
		ctx = context.Background() // never done: the loop ends at Close
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = time.Second
	}
	w := watcher{s: s, path: path, onError: opts.OnError, onReload: opts.OnReload, routes: opts.Routes, maxSize: opts.MaxSize}
	// ended reports whether the loop is to end. It is asked before each
	// poll, since a select with a tick ready too may choose the tick.
	ended := func() bool {
		select {
		case <-ctx.Done():
			return true
		case <-s.closed:
			return true
		default:
			return false
		}
	}
	if ended() {
		return
	}
	w.poll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closed:
			return
		case <-t.C:
			if ended() {
				return
			}
			w.poll()
		}
	}
}

// watcher is the state of one WatchFile loop; only its goroutine touches it.
type watcher struct {
	s        *Service
	path     string
	onError  func(error)
	onReload func(Reload)
	routes   []string
	maxSize  int64 // <= 0: DefaultMaxRulesSize

	// now is the wall clock, which file times are read against; nil is
	// time.Now. changed is changeTime when nil. Tests set them.
	now     func() time.Time
	changed func(os.FileInfo) time.Time

	stat    os.FileInfo // last successful stat, nil before
	statAt  time.Time   // the wall time just before that stat
	sum     [sha256.Size]byte
	read    bool   // whether sum holds the hash of some content read
	lastErr string // the file's access error reported last, "" once read
	// failing is set when the last word reported is that the valid rules
	// of the content of hash failedSum could not be built (a factory
	// failed); cleared once rules are installed or another error is
	// reported. The retries of that content are then not reported, whatever
	// their errors say.
	failing   bool
	failedSum [sha256.Size]byte
}

// limit returns the largest file the watcher reads.
func (w *watcher) limit() int64 {
	if w.maxSize <= 0 {
		return DefaultMaxRulesSize
	}
	return w.maxSize
}

// tooLarge is the error for a file larger than limit bytes. It says nothing
// of the file's size, which may grow at every poll (a log file): the error
// is reported once while it stays the same (see failAccess).
func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s is larger than %d bytes, the most a rules file may hold (WatchOptions.MaxSize)", path, limit)
}

// notRegular is the error for a path that names no regular file.
func notRegular(path string) error {
	return fmt.Errorf("%s is not a regular file", path)
}

// readBounded returns the content of the file at path, or an error when it
// holds more than limit bytes: no more than limit+1 bytes are read, even
// from a file that grows while it is read. A file that is not a regular
// file is refused as poll refuses it, checked again on the file opened: one
// put at the path since poll's check (a named pipe, which opening waits for
// no writer of, see openFlags) is not read.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path)
	}
	// One byte past the bound tells a file that holds more; a bound of
	// math.MaxInt64 has no byte past it (limit+1 would wrap to a negative
	// count, which reads nothing), and no file reaches it anyway.
	n := limit
	if n < math.MaxInt64 {
		n++
	}
	data, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit)
	}
	return data, nil
}

// poll checks the file once and replaces the rules if its content changed.
func (w *watcher) poll() {
	if w.path == "" {
		// os.Stat would say "stat : no such file or directory".
		w.failAccess(errors.New("the path is empty"))
		return
	}
	statAt := time.Now()
	if w.now != nil {
		statAt = w.now()
	}
	fi, err := os.Stat(w.path)
	if err == nil && !fi.Mode().IsRegular() {
		// A named pipe would block the read until a writer came, past the
		// context's end; a device such as /dev/zero would never end.
		err = notRegular(w.path)
	}
	if err == nil && fi.Size() > w.limit() {
		// Not read at all: a log file named by mistake may be huge.
		err = tooLarge(w.path, w.limit())
	}
	if err == nil {
		// On Windows, os.Stat does not record which file it saw: SameFile
		// looks the identity up by path the first time it is asked. Asked
		// now, it pins this file's, so that a file renamed over the path
		// before the next poll is not taken for this one. Elsewhere the
		// identity is in fi already, and this costs nothing.
		os.SameFile(fi, fi)
	}
	if err != nil {
		// Once the file can be read again it is loaded even if unchanged,
		// and the outcome reported, as after a failed read: the last word
		// the callbacks heard was that the file could not be reached.
		w.read = false
		w.failAccess(err)
		return
	}
	// os.SameFile tells a file renamed over the path (a new inode) from
	// the one read last, even when both have the same size and
	// modification time, as rsync -t or a build that pins times leave
	// them. The status change time (see changeTime) tells a file
	// rewritten in place, or one whose inode number was reused, and then
	// given the old modification time (cp -p, touch -r, an archive of
	// pinned times unpacked over it). These are trusted only when the
	// last read began well after the change: a coarse file-system clock
	// gives a write the time of the write before it when both land in one
	// tick, and a read during that tick may have seen the first only. It
	// is when the read came, not how long ago, that tells: the next poll
	// may come much later.
	changeTime := changeTime
	if w.changed != nil {
		changeTime = w.changed
	}
	changed := changeTime(fi)
	if w.stat != nil && w.read && os.SameFile(fi, w.stat) && fi.Size() == w.stat.Size() &&
		fi.ModTime().Equal(w.stat.ModTime()) && changed.Equal(changeTime(w.stat)) &&
		w.statAt.Sub(changed) > recentWrite {
		return
	}
	w.stat, w.statAt = fi, statAt
	data, err := readBounded(w.path, w.limit())
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
	installed, loaded := false, err == nil
	if loaded {
		installed, err = w.s.replaceUnlessClosed(rules)
	}
	if err == nil && !installed {
		return // closed: the loop ends at its next turn
	}
	if err != nil {
		err = fmt.Errorf("%w (in %s); %s", err, w.path, rulesStay)
		if loaded && !errors.Is(err, hotlimit.ErrInvalidConfig) {
			// Valid rules whose limiters could not be built: the
			// factory failed, perhaps for a while (its backend out of
			// reach). They are tried again at every poll until they are
			// installed or the file changes, and the first failure is
			// reported once for the content: the retries' errors may
			// name what changes at every try (an address, a time), and
			// their text tells nothing new.
			w.read = false
			if w.failing && sum == w.failedSum {
				return
			}
			w.failing, w.failedSum = true, sum
		} else {
			w.failing = false
		}
		if w.onError != nil {
			// Once per content: the same content is not loaded again.
			w.onError(err)
		}
		return
	}
	w.failing = false
	if w.onReload != nil {
		r := Reload{Path: w.path, Rules: rules}
		if w.routes != nil {
			r.Unmatched = UnmatchedAPIs(rules, w.routes)
		}
		w.onReload(r)
	}
}

// rulesStay ends every error the watcher reports, so that a log of it says
// what the service decides by meanwhile.
const rulesStay = "the rules in force stay"

// failAccess reports an error reaching the file, unless it is the one
// reported last: a missing file is reported once, not at every poll.
func (w *watcher) failAccess(err error) {
	err = fmt.Errorf("service: watching rules: %w; %s", err, rulesStay)
	if err.Error() == w.lastErr {
		return
	}
	w.lastErr = err.Error()
	w.failing = false // the last word is now this one
	if w.onError != nil {
		w.onError(err)
	}
}

// replaceUnlessClosed is Replace, unless the service is closed: it then
// installs nothing and returns false. Checked with mu held, as Close
// closes s.closed, so no rules are installed after Close returned.
func (s *Service) replaceUnlessClosed(rules Rules) (bool, error) {
	var dropped []hotlimit.Limiter
	defer func() { s.closeDropped(dropped) }() // after the unlock
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
		return false, nil
	default:
	}
	var err error
	dropped, err = s.replaceLocked(rules)
	return true, err
}
