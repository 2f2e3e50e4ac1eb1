package envoyrls

import (
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shapes writes random configuration files in the reference's format, in
// YAML's flow style: keys given again, anchors and their aliases, merge
// keys (of merges), unknown keys, and values of every kind where each
// field goes, so that a file is often valid, and otherwise wrong in one of
// the ways its decoder or its checks refuse.
type shapes struct {
	r       *rand.Rand
	anchors []string
}

func (g *shapes) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

// anchor returns v, sometimes anchored for a later alias to use.
func (g *shapes) anchor(v string) string {
	if g.r.Intn(4) != 0 {
		return v
	}
	a := "a" + strconv.Itoa(len(g.anchors))
	g.anchors = append(g.anchors, a)
	return "&" + a + " " + v
}

// alias returns, sometimes, an alias of an anchor written before.
func (g *shapes) alias() (string, bool) {
	if len(g.anchors) == 0 || g.r.Intn(3) != 0 {
		return "", false
	}
	return "*" + g.anchors[g.r.Intn(len(g.anchors))], true
}

// wrong returns a value of any kind.
func (g *shapes) wrong() string {
	return g.pick("5", "x", "[a]", "{a: b}", "~", "1.5", "[]", "{}", "[~]")
}

// mapping returns a mapping of one to four pairs of keys (the first the
// likeliest), some given twice, and merge keys of aliases.
func (g *shapes) mapping(keys []string, val func(k string) string) string {
	var parts []string
	for range 1 + g.r.Intn(4) {
		if g.r.Intn(6) == 0 {
			if a, ok := g.alias(); ok {
				parts = append(parts, "<<: "+a)
				continue
			}
		}
		k := keys[g.r.Intn(len(keys))]
		if k == "foo" && g.r.Intn(3) != 0 {
			k = keys[0]
		}
		parts = append(parts, k+": "+val(k))
	}
	return g.anchor("{" + strings.Join(parts, ", ") + "}")
}

func (g *shapes) rateLimit() string {
	if a, ok := g.alias(); ok {
		return a
	}
	if g.r.Intn(30) == 0 {
		return g.wrong()
	}
	return g.mapping([]string{"unit", "requests_per_unit", "name", "replaces", "unlimited", "foo"}, func(k string) string {
		switch k {
		case "unit":
			return g.pick("second", "minute", "hour", "second", "bogus", "[a]", "~")
		case "requests_per_unit":
			if a, ok := g.alias(); ok {
				return a
			}
			return g.anchor(g.pick("1", "2", "0", "1.5", "'3'", "~", "4294967296", "2.0"))
		case "name":
			return g.pick("n", "m", "~")
		case "replaces":
			if a, ok := g.alias(); ok {
				return a
			}
			if g.r.Intn(4) == 0 {
				return g.wrong()
			}
			return g.anchor("[" + g.mapping([]string{"name", "foo"}, func(string) string { return g.pick("n", "m", "~", "[a]") }) + "]")
		case "unlimited":
			return g.pick("true", "false", "5")
		}
		return g.wrong()
	})
}

func (g *shapes) descriptor(depth int) string {
	if a, ok := g.alias(); ok {
		return a
	}
	if g.r.Intn(30) == 0 {
		return g.wrong()
	}
	return g.mapping([]string{"key", "rate_limit", "value", "descriptors", "shadow_mode", "foo"}, func(k string) string {
		switch k {
		case "key":
			return g.pick("k", "j", "i", "5", "~")
		case "value":
			return g.pick("v", "w", "5", "{a: b}")
		case "rate_limit":
			return g.rateLimit()
		case "descriptors":
			return g.descriptors(depth + 1)
		case "shadow_mode":
			return g.pick("true", "false", "yes")
		}
		return g.wrong()
	})
}

func (g *shapes) descriptors(depth int) string {
	if a, ok := g.alias(); ok {
		return a
	}
	if depth > 2 || g.r.Intn(20) == 0 {
		return g.wrong()
	}
	var ds []string
	for range g.r.Intn(3) {
		ds = append(ds, g.descriptor(depth))
	}
	return g.anchor("[" + strings.Join(ds, ", ") + "]")
}

// file returns a file of a domain and descriptors, either given again.
func (g *shapes) file() string {
	g.anchors = nil
	lines := []string{"domain: d"}
	for range 1 + g.r.Intn(4) {
		if g.r.Intn(6) == 0 {
			lines = append(lines, "domain: "+g.pick("d", "e", "5", "[a]"))
		} else {
			lines = append(lines, "descriptors: "+g.descriptors(0))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestReferenceConfigLoadRandomShapes loads 1000 random files (see shapes)
// with the reference server (at HOTLIMITD_REFERENCE) and with ParseDomain,
// and compares whether each accepts each file; HOTLIMITD_REFERENCE_SEED
// replays a run.
//
//	HOTLIMITD_REFERENCE=/tmp/refbin go test -run TestReferenceConfigLoadRandomShapes .
func TestReferenceConfigLoadRandomShapes(t *testing.T) {
	bin := referenceBinary(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv("HOTLIMITD_REFERENCE_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "HOTLIMITD_REFERENCE_SEED")
		seed = v
	}
	t.Logf("seed %d (HOTLIMITD_REFERENCE_SEED)", seed)
	g := &shapes{r: rand.New(rand.NewSource(seed))}
	for range 1000 {
		body := g.file()
		root := t.TempDir()
		dir := filepath.Join(root, "rt", "config")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(body), 0o644))
		refOK, refMsg := referenceLoads(t, bin, root)
		_, err := ParseDomain("d.yaml", []byte(body))
		assert.Equal(t, refOK, err == nil, "%s\naccepted by the reference (%s), by hotlimitd (%v)", body, refMsg, err)
	}
}
