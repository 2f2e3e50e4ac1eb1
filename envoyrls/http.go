package envoyrls

import (
	"context"
	"io"
	"net/http"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxJSONBody bounds the body /json reads.
const maxJSONBody = 1 << 20

// JSONHandler serves ShouldRateLimit over HTTP, as the reference's /json
// endpoint does: a POST of the RateLimitRequest in protobuf's JSON mapping
// gets the RateLimitResponse in the same mapping, with status 200, or 429
// when the overall code is OVER_LIMIT. A bad request gets 400 with the
// error; a backend failure 503.
func (s *Server) JSONHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "use POST with a JSON RateLimitRequest", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
		if err != nil || len(body) > maxJSONBody {
			http.Error(w, "request body unreadable or larger than 1 MiB", http.StatusBadRequest)
			return
		}
		var req pb.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil {
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

// WatchDir polls dir every interval until ctx is done, and reloads the
// configuration when a file changed. A directory that fails to load, or to
// be read (a file that vanished or cannot be opened), is logged once with the
// reason and the configuration in force stays; onLoad, when not nil, hears
// of every load and of every new failure. WatchDir assumes the configuration
// in force was loaded from dir: if [LoadDir] loaded it, a file changed since
// then is loaded at the first poll. An interval <= 0 watches nothing:
// WatchDir returns at once.
func (s *Server) WatchDir(ctx context.Context, dir string, interval time.Duration, onLoad func(error)) {
	if interval <= 0 {
		return // no polling, no reload
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

// dirWatch is the state of WatchDir between two polls.
type dirWatch struct {
	s      *Server
	dir    string
	onLoad func(error)
	last   [32]byte // the digest of the files last loaded, or tried
	unread string   // the error that last kept dir from being read; "" when read
}

func (s *Server) newDirWatch(dir string, onLoad func(error)) *dirWatch {
	w := &dirWatch{s: s, dir: dir, onLoad: onLoad}
	if c := s.Config(); c.dir == dir {
		w.last = c.digest // a change made since it was loaded is one to load
	} else {
		if files, err := readDir(dir); err == nil {
			w.last = files.digest
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
		return
	}
	w.last, w.unread = files.digest, ""
	err = w.s.reloadFiles(files) // what was hashed, not what the directory holds by now
	if w.onLoad != nil {
		w.onLoad(err)
	}
}

// ReloadDir loads dir and puts it in force, logging the outcome; on error the
// configuration in force stays.
func (s *Server) ReloadDir(dir string) error {
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
