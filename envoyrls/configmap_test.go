package envoyrls

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configMap builds and updates a directory as the kubelet's atomic writer
// lays out a ConfigMap volume:
//
//	..2026_12_05_02_10_32.1/rl.yaml   the files of one version
//	..data -> ..2026_12_05_02_10_32.1
//	rl.yaml -> ..data/rl.yaml         what the application sees
//
// An update writes a new timestamped directory, points a temporary symlink
// at it and renames that over ..data, then adds the symlinks of new files,
// removes those of files gone, and removes the previous version; each step
// is a method, so that a test can poll between any two.
type configMap struct {
	t       *testing.T
	dir     string
	version int
	old     string // the timestamped directory ..data named before the last swap
}

func newConfigMap(t *testing.T, files map[string]string) *configMap {
	t.Helper()
	m := &configMap{t: t, dir: t.TempDir()}
	m.update(files)
	return m
}

// write puts files in a new timestamped directory and returns its name.
func (m *configMap) write(files map[string]string) string {
	m.t.Helper()
	m.version++
	ts := fmt.Sprintf("..2026_12_05_02_10_32.%d", m.version)
	require.NoError(m.t, os.Mkdir(filepath.Join(m.dir, ts), 0o755))
	for name, data := range files {
		require.NoError(m.t, os.WriteFile(filepath.Join(m.dir, ts, name), []byte(data), 0o644))
	}
	return ts
}

// swap points ..data at ts atomically, by renaming a temporary symlink.
func (m *configMap) swap(ts string) {
	m.t.Helper()
	m.old, _ = os.Readlink(filepath.Join(m.dir, "..data"))
	tmp := filepath.Join(m.dir, "..data_tmp")
	require.NoError(m.t, os.Symlink(ts, tmp))
	require.NoError(m.t, os.Rename(tmp, filepath.Join(m.dir, "..data")))
}

// link adds the user-visible symlink of each of files that has none.
func (m *configMap) link(files map[string]string) {
	m.t.Helper()
	for name := range files {
		p := filepath.Join(m.dir, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		require.NoError(m.t, os.Symlink(filepath.Join("..data", name), p))
	}
}

// unlink removes the user-visible symlinks of the files not in files.
func (m *configMap) unlink(files map[string]string) {
	m.t.Helper()
	ents, err := os.ReadDir(m.dir)
	require.NoError(m.t, err)
	for _, e := range ents {
		if _, keep := files[e.Name()]; !keep && !strings.HasPrefix(e.Name(), "..") {
			require.NoError(m.t, os.Remove(filepath.Join(m.dir, e.Name())))
		}
	}
}

// prune removes the previous version's directory.
func (m *configMap) prune() {
	m.t.Helper()
	if m.old != "" {
		require.NoError(m.t, os.RemoveAll(filepath.Join(m.dir, m.old)))
	}
}

// update runs every step of an update.
func (m *configMap) update(files map[string]string) {
	m.t.Helper()
	m.swap(m.write(files))
	m.link(files)
	m.unlink(files)
	m.prune()
}

const (
	cmWeb   = "domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: hour, requests_per_unit: %d}\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: %d}\n"
	cmMongo = "domain: mongo\ndescriptors:\n  - key: database\n    rate_limit: {unit: hour, requests_per_unit: 7}\n"
)

// TestLoadDirConfigMapLayout: a ConfigMap volume loads each file once, by
// the name the application sees, without warnings about ..data or the
// timestamped directory, and without failing on them.
func TestLoadDirConfigMapLayout(t *testing.T) {
	m := newConfigMap(t, map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 3, 4), "mongo.yaml": cmMongo})
	cfg, err := LoadDir(m.dir)
	require.NoError(t, err)
	var names, files []string
	for _, d := range cfg.Domains() {
		names = append(names, d.Name)
		files = append(files, d.File)
	}
	assert.Equal(t, []string{"mongo", "web"}, names)
	assert.Equal(t, []string{filepath.Join(m.dir, "mongo.yaml"), filepath.Join(m.dir, "web.yaml")}, files)
	assert.Empty(t, cfg.Warnings())
	assert.Len(t, cfg.Rules(), 3)
}

// cmServer returns a server of the ConfigMap m with a frozen clock, and a
// function taking one hit of a descriptor of web, returning what is left.
func cmServer(t *testing.T, m *configMap) (*Server, *lockedBuffer, func(key string) (limit, remaining uint32)) {
	t.Helper()
	cfg, err := LoadDir(m.dir)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, err := New(cfg, WithClock(func() int64 { return 1 << 40 }), WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	require.NoError(t, err)
	hit := func(key string) (uint32, uint32) {
		t.Helper()
		resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: "a"}},
		}}})
		require.NoError(t, err)
		st := resp.Statuses[0]
		return st.CurrentLimit.GetRequestsPerUnit(), st.LimitRemaining
	}
	return s, logs, hit
}

// TestDirWatchConfigMapUpdate: an update of a ConfigMap volume, where no
// path the application sees changes, only what ..data names, is loaded at
// the next poll; the rule that did not change keeps its count, the one that
// did starts afresh under its new limit; a poll after that loads nothing.
func TestDirWatchConfigMapUpdate(t *testing.T) {
	m := newConfigMap(t, map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 3, 4)})
	s, _, hit := cmServer(t, m)
	var reports []error
	w := s.newDirWatch(m.dir, func(err error) { reports = append(reports, err) })
	hit("ip")
	hit("user")
	_, left := hit("user")
	require.Equal(t, uint32(2), left)

	m.update(map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 3, 9)})
	w.poll()
	require.Equal(t, []error{nil}, reports, "the update is loaded")
	limit, left := hit("ip")
	assert.Equal(t, uint32(3), limit)
	assert.Equal(t, uint32(1), left, "the rule that did not change keeps its count")
	limit, left = hit("user")
	assert.Equal(t, uint32(9), limit, "the new limit is in force")
	assert.Equal(t, uint32(8), left, "the changed rule starts afresh")
	w.poll()
	assert.Len(t, reports, 1, "nothing more to load")
}

// TestDirWatchConfigMapRemovesAFile: an update that drops a file is loaded
// at once, even when polled between the swap of ..data and the removal of
// the dropped file's symlink, which dangles until then: what ..data names is
// the configuration, not a half-updated directory.
func TestDirWatchConfigMapRemovesAFile(t *testing.T) {
	web := fmt.Sprintf(cmWeb, 3, 4)
	m := newConfigMap(t, map[string]string{"web.yaml": web, "mongo.yaml": cmMongo})
	s, logs, _ := cmServer(t, m)
	var reports []error
	w := s.newDirWatch(m.dir, func(err error) { reports = append(reports, err) })

	next := map[string]string{"web.yaml": web}
	m.swap(m.write(next))
	m.prune() // the kubelet may remove the previous version before the symlinks are done
	w.poll()
	require.Equal(t, []error{nil}, reports, "loaded, not unreadable")
	_, ok := s.Config().Match("mongo", kv("database", "x"))
	assert.False(t, ok, "the dropped domain is gone")
	assert.NotContains(t, logs.String(), "unreadable")

	m.link(next)
	m.unlink(next)
	w.poll()
	assert.Len(t, reports, 1, "the symlinks catching up change nothing")
}

// TestDirWatchConfigMapAddsAFile: an update that adds a file is loaded
// whole at the first poll after the swap, before its symlink appears.
func TestDirWatchConfigMapAddsAFile(t *testing.T) {
	web := fmt.Sprintf(cmWeb, 3, 4)
	m := newConfigMap(t, map[string]string{"web.yaml": web})
	s, _, _ := cmServer(t, m)
	var reports []error
	w := s.newDirWatch(m.dir, func(err error) { reports = append(reports, err) })

	next := map[string]string{"web.yaml": web, "mongo.yaml": cmMongo}
	m.swap(m.write(next))
	w.poll()
	require.Equal(t, []error{nil}, reports)
	r, ok := s.Config().Match("mongo", kv("database", "x"))
	require.True(t, ok, "the new domain is in force")
	require.NotNil(t, r)
	assert.Equal(t, filepath.Join(m.dir, "mongo.yaml"), s.Config().domains["mongo"].File, "named as the application will see it")

	m.link(next)
	m.prune()
	w.poll()
	assert.Len(t, reports, 1, "the symlink appearing changes nothing")
}

// TestDirWatchConfigMapSwapWhileReading: an update whose swap lands while
// a poll reads the files (here a domain moves from one file to another)
// never gets the two versions mixed, which would load the domain twice and
// reject the configuration: the poll sees ..data moved on and reads the new
// version, whole, whether the one it started with is removed or not.
func TestDirWatchConfigMapSwapWhileReading(t *testing.T) {
	before := map[string]string{"a.yaml": fmt.Sprintf(cmWeb, 3, 4), "b.yaml": cmMongo}
	after := map[string]string{"a.yaml": cmMongo, "b.yaml": fmt.Sprintf(cmWeb, 5, 6)}
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			m := newConfigMap(t, before)
			s, logs, hit := cmServer(t, m)
			var reports []error
			w := s.newDirWatch(m.dir, func(err error) { reports = append(reports, err) })
			m.update(map[string]string{"a.yaml": fmt.Sprintf(cmWeb, 3, 5), "b.yaml": cmMongo})

			swapped := false
			readHook = func(name string) {
				if name == "a.yaml" && !swapped { // between the two files of one read
					swapped = true
					m.swap(m.write(after))
					if prune {
						m.prune()
					}
				}
			}
			t.Cleanup(func() { readHook = nil })
			w.poll()
			require.True(t, swapped)
			require.Equal(t, []error{nil}, reports, "one version, whole")
			assert.NotContains(t, logs.String(), "rejected")
			limit, _ := hit("user")
			assert.Equal(t, uint32(6), limit, "the new version, read again once ..data moved on")
			assert.Len(t, s.Config().Domains(), 2)
			w.poll()
			assert.Len(t, reports, 1, "nothing more to load")
		})
	}
}

// TestLoadDirConfigMapPruneBeforeListing: when ..data moves on and the
// version it named is being removed, file by file, between the read of
// ..data and the listing of that version, the listing misses the files
// already removed without any error. The read must not load that part of
// a version (here, only mongo.yaml: the web domain would vanish) but the
// new version, whole.
func TestLoadDirConfigMapPruneBeforeListing(t *testing.T) {
	m := newConfigMap(t, map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 3, 4), "mongo.yaml": cmMongo})
	first := true
	readHook = func(name string) {
		if name != "..data" || !first {
			return
		}
		first = false
		old, err := os.Readlink(filepath.Join(m.dir, "..data"))
		require.NoError(t, err)
		m.swap(m.write(map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 5, 6), "mongo.yaml": cmMongo}))
		require.NoError(t, os.Remove(filepath.Join(m.dir, old, "web.yaml"))) // the removal under way
	}
	t.Cleanup(func() { readHook = nil })
	cfg, err := LoadDir(m.dir)
	require.NoError(t, err)
	require.False(t, first, "the removal happened between ..data and the listing")
	r, ok := cfg.Match("web", kv("user", "a"))
	require.True(t, ok, "the web domain is loaded")
	assert.EqualValues(t, 6, r.RequestsPerUnit, "from the new version")
	assert.Len(t, cfg.Domains(), 2)
}

// TestLoadDirConfigMapAlwaysMoving: a ..data that moves on during every
// read is an error that says so, never a version read while it was
// removed.
func TestLoadDirConfigMapAlwaysMoving(t *testing.T) {
	m := newConfigMap(t, map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 3, 4)})
	reads := 0
	readHook = func(name string) {
		if name == "..data" {
			reads++
			m.swap(m.write(map[string]string{"web.yaml": fmt.Sprintf(cmWeb, 3, 4+reads)}))
		}
	}
	t.Cleanup(func() { readHook = nil })
	_, err := LoadDir(m.dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "..data changed during each of 3 reads")
	assert.Equal(t, 3, reads)
}
