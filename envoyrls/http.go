package envoyrls

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// Bounds on what /json reads.
const (
	// maxJSONBody bounds the body.
	maxJSONBody = 1 << 20
	// maxJSONDepth bounds the nesting of the body's objects and arrays: a
	// RateLimitRequest nests five deep (request, descriptors, descriptor,
	// entries, entry).
	maxJSONDepth = 8
)

// jsonBodyTypes are the media types that say a /json body is JSON, or that
// a client sends for one by default: curl's for a body given with -d, as
// the reference's own example does, and text/plain.
var jsonBodyTypes = map[string]bool{
	"application/json": true, "text/json": true, "application/x-www-form-urlencoded": true, "text/plain": true,
}

// JSONHandler serves ShouldRateLimit over HTTP, as the reference's /json
// endpoint does: a POST of the RateLimitRequest in protobuf's JSON mapping
// gets the RateLimitResponse in the same mapping, with status 200, or 429
// when the overall code is OVER_LIMIT. A backend failure gets 503. What the
// service cannot read gets a 4xx with the reason, before any of it is
// decoded past its bounds: 405 for a method other than POST, 413 for a
// body over 1 MiB, 415 for a body that is not a RateLimitRequest under a
// Content-Type other than JSON's (application/json, text/json, +json) or
// one a client sends JSON under by default (none, text/plain,
// application/x-www-form-urlencoded; the body is read whatever its
// Content-Type, as the reference does), 400 for invalid JSON under those
// types, for more than
// [MaxDescriptors] descriptors or [MaxEntries] entries in one (refused
// before they are decoded, each costing some 160 bytes), and for a request
// [Server.ShouldRateLimit] refuses as InvalidArgument.
func (s *Server) JSONHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "use POST with a JSON RateLimitRequest", http.StatusMethodNotAllowed)
			return
		}
		if r.ContentLength > maxJSONBody {
			http.Error(w, fmt.Sprintf("request body of %d bytes: at most %d", r.ContentLength, maxJSONBody), http.StatusRequestEntityTooLarge)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		if err != nil {
			http.Error(w, "request body unreadable: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := checkJSONBounds(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req pb.RateLimitRequest
		if err := (protojson.UnmarshalOptions{RecursionLimit: maxJSONDepth}).Unmarshal(body, &req); err != nil {
			if ct := r.Header.Get("Content-Type"); !isJSONType(ct) {
				http.Error(w, fmt.Sprintf("Content-Type %q: send a JSON RateLimitRequest as application/json (%v)", ct, err), http.StatusUnsupportedMediaType)
				return
			}
			http.Error(w, "invalid RateLimitRequest JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := s.ShouldRateLimit(r.Context(), &req)
		if err != nil {
			code := http.StatusBadRequest
			if status.Code(err) != codes.InvalidArgument {
				code = http.StatusServiceUnavailable
			}
			http.Error(w, status.Convert(err).Message(), code)
			return
		}
		out, err := protojson.Marshal(resp)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		_, _ = w.Write(out)
	})
}

// checkJSONBounds refuses a RateLimitRequest in JSON whose descriptor list
// is longer than MaxDescriptors, or a descriptor's entry list longer than
// MaxEntries, or which nests deeper than maxJSONDepth, before it is decoded:
// a 1 MiB body of empty descriptors would decode into some 50 MB. The
// request's only arrays are those two, entries within descriptors, so it
// counts the elements of each array by how many arrays hold it. Invalid JSON
// passes, for protojson to report.
func checkJSONBounds(body []byte) error {
	return checkJSONLimits(body, MaxDescriptors, MaxEntries)
}

// checkJSONLimits is checkJSONBounds with the bounds given.
func checkJSONLimits(body []byte, maxDescriptors, maxEntries int) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type level struct {
		array bool
		n     int
	}
	stack := make([]level, 0, maxJSONDepth)
	arrays := 0 // the arrays on stack
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or a syntax error protojson reports
		}
		d, delim := tok.(json.Delim)
		if delim && (d == ']' || d == '}') {
			if d == ']' {
				arrays--
			}
			stack = stack[:len(stack)-1]
			continue
		}
		if top := len(stack) - 1; top >= 0 && stack[top].array { // a value starts in an array
			stack[top].n++
			switch n := stack[top].n; {
			case arrays == 1 && n > maxDescriptors:
				return invalidJSON("rate limit descriptor list has more than %d descriptors", maxDescriptors)
			case arrays > 1 && n > maxEntries:
				return invalidJSON("a descriptor has more than %d entries", maxEntries)
			}
		}
		if delim { // '[' or '{'
			if len(stack) == maxJSONDepth {
				return invalidJSON("JSON nested deeper than %d levels", maxJSONDepth)
			}
			stack = append(stack, level{array: d == '['})
			if d == '[' {
				arrays++
			}
		}
	}
}

// isJSONType reports whether the Content-Type ct says the body is JSON, or
// is one a client sends for JSON by default: none, application/json or
// +json, text/json, text/plain, curl's application/x-www-form-urlencoded;
// in any case and with any parameters, even malformed ones.
func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return jsonBodyTypes[mt] || strings.HasSuffix(mt, "+json")
}

func invalidJSON(format string, args ...any) error {
	return fmt.Errorf("invalid RateLimitRequest JSON: "+format, args...)
}

// WatchDir polls dir every interval until ctx is done, and reloads the
// configuration when a file changed. An entry of dir it does not read (a
// file without a YAML extension, a subdirectory) that appears meanwhile is
// named in a warning at the next poll, as at a load, though it changes
// nothing to reload. A directory that fails to load, or to
// be read (a file that vanished or cannot be opened), is logged once with the
// reason and the configuration in force stays; onLoad, when not nil, hears
// of every load and of every new failure. WatchDir assumes the configuration
// in force was loaded from dir: if [LoadDir] loaded it, a file changed since
// then is loaded at the first poll. An interval <= 0 watches nothing:
// WatchDir returns at once. So does it, telling onLoad why, on a Server
// that [New] did not make, and under a nil ctx, which could never end the
// watch (pass context.Background() to watch for as long as the program
// runs).
func (s *Server) WatchDir(ctx context.Context, dir string, interval time.Duration, onLoad func(error)) {
	if interval <= 0 {
		return // no polling, no reload
	}
	var refused error
	switch {
	case !s.made():
		refused = errServerNotMade
	case ctx == nil:
		refused = errNilWatch
	}
	if refused != nil {
		if onLoad != nil {
			onLoad(refused)
		}
		return
	}
	w := s.newDirWatch(dir, onLoad)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.poll()
	}
}

// errNilWatch is WatchDir's error for a nil ctx.
var errNilWatch = errors.New("envoyrls: WatchDir with a nil Context, which could never end the watch: pass one, such as context.Background()")

// dirWatch is the state of WatchDir between two polls.
type dirWatch struct {
	s      *Server
	dir    string
	onLoad func(error)
	last   [32]byte // the digest of the files last loaded, or tried
	unread string   // the error that last kept dir from being read; "" when read
	// skipped are the entries of dir not read at the last poll (or load),
	// as warnings: a poll names in a warning those it finds new, whether
	// or not the files read changed.
	skipped []string
}

func (s *Server) newDirWatch(dir string, onLoad func(error)) *dirWatch {
	w := &dirWatch{s: s, dir: dir, onLoad: onLoad}
	if c := s.Config(); c.dir == dir {
		w.last = c.digest // a change made since it was loaded is one to load
		w.skipped = c.skipped
	} else {
		if files, err := readDir(dir); err == nil {
			w.last, w.skipped = files.digest, files.skipped
		}
	}
	return w
}

// poll reloads dir if its files changed since the last poll. A directory
// that cannot be read is reported once per distinct error, not once per
// poll; once it can be read again, it is loaded (and the outcome logged)
// even if its files are as before the failure.
func (w *dirWatch) poll() {
	files, err := readDir(w.dir)
	if err != nil {
		if err.Error() == w.unread {
			return
		}
		w.unread = err.Error()
		w.s.set.log.Error("config directory unreadable, previous config stays in force", "dir", w.dir, "err", err)
		if w.onLoad != nil {
			w.onLoad(err)
		}
		return
	}
	if files.digest == w.last && w.unread == "" {
		w.warnSkipped(files.skipped) // a file put beside the configuration under a name not read
		return
	}
	w.last, w.unread = files.digest, ""
	err = w.s.reloadFiles(files) // what was hashed, not what the directory holds by now
	if err == nil {
		w.skipped = files.skipped // reloadFiles named each in a warning
	} else {
		w.warnSkipped(files.skipped)
	}
	if w.onLoad != nil {
		w.onLoad(err)
	}
}

// warnSkipped names in a warning each entry of skipped that the last poll
// did not skip, and keeps skipped for the next poll: a file given a name
// that is not read (payments.json, rl.yaml.new) is told of once, when it
// appears, rather than left unread in silence until a configuration file
// changes.
func (w *dirWatch) warnSkipped(skipped []string) {
	if slices.Equal(skipped, w.skipped) { // the directory as at the last poll
		return
	}
	// A set, not a search of the list for each entry: a directory of
	// thousands of other files would cost their square at every poll.
	known := make(map[string]struct{}, len(w.skipped))
	for _, sk := range w.skipped {
		known[sk] = struct{}{}
	}
	for _, sk := range skipped {
		if _, ok := known[sk]; !ok {
			w.s.set.log.Warn("config warning", "dir", w.dir, "warning", sk)
		}
	}
	w.skipped = skipped
}

// ReloadDir loads dir and puts it in force, logging the outcome; on error the
// configuration in force stays. A Server that [New] did not make refuses it.
func (s *Server) ReloadDir(dir string) error {
	if !s.made() {
		return errServerNotMade
	}
	files, err := readDir(dir)
	if err != nil {
		s.set.log.Error("config rejected, previous config stays in force", "dir", dir, "err", err)
		return err
	}
	return s.reloadFiles(files)
}

// reloadFiles puts the configuration of files in force, as ReloadDir.
func (s *Server) reloadFiles(files *dirFiles) error {
	dir := files.dir
	cfg, err := files.parse()
	if err == nil {
		err = s.Reload(cfg)
	}
	if err != nil {
		s.set.log.Error("config rejected, previous config stays in force", "dir", dir, "err", err)
		return err
	}
	for _, w := range cfg.Warnings() {
		s.set.log.Warn("config warning", "dir", dir, "warning", w)
	}
	s.set.log.Info("config loaded", "dir", dir, "domains", len(cfg.domains), "rules", len(cfg.Rules()))
	return nil
}
