package envoyrls

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/durations"
	"github.com/hotlimit/hotlimit/internal/jsonobj"
	"go.yaml.in/yaml/v3"
)

// ErrConfig is wrapped by every error that rejects a configuration file.
var ErrConfig = errors.New("envoyrls: invalid config")

// errPrefix starts the message of every error of this package.
const errPrefix = "envoyrls: "

// prefixedError is err under a context of this package: its message is
// errPrefix, the context, and err's own message without the errPrefix it
// may start with, so that an error of this package wrapped by another (a
// zero Metrics refused by New, ErrConfig) names the package once.
type prefixedError struct {
	msg string
	err error
}

func (e *prefixedError) Error() string { return e.msg }
func (e *prefixedError) Unwrap() error { return e.err }

// wrapOnce returns err under context, as "envoyrls: context: " and err's
// message, which names the package only if it did not already.
func wrapOnce(context string, err error) error {
	return &prefixedError{msg: errPrefix + context + ": " + strings.TrimPrefix(err.Error(), errPrefix), err: err}
}

// Rule is one rate_limit entry of a configuration: the limit a descriptor
// path gets. It is immutable once loaded.
type Rule struct {
	// Domain is the domain of the file that declares the rule.
	Domain string
	// Key is the rule's full key as the reference server names its stats:
	// the domain, then each level's key or key_value, joined by '.', as in
	// "rl.foo.bar_bkthomps". It names the rule's metrics. Two rules whose
	// paths spell the same key, a level's key or value holding a '.'
	// ("a.b", or "a" then "b"), share it, and their metrics, as the
	// reference's stats of one name are one.
	Key string
	// Name and Replaces are the rule's name and the names of the rules it
	// replaces: a request whose descriptors match this rule and a rule named
	// in Replaces is not limited by the latter. Name is UTF-8, as the
	// responses that carry it must be: a name that is not (given as
	// !!binary) is an error at load.
	Name     string
	Replaces []string
	// Unlimited rules always answer OK, with limit_remaining MaxUint32.
	Unlimited bool
	// ShadowMode rules count and report an over-limit in the metrics but
	// answer OK.
	ShadowMode bool
	// QuotaMode rules make the overall answer OVER_LIMIT only when every
	// quota-mode descriptor of the request is over.
	QuotaMode bool
	// DetailedMetric is read for compatibility; metrics stay per rule.
	DetailedMetric bool
	// RequestsPerUnit, Unit and UnitMultiplier are what responses report as
	// current_limit. A window that is not a whole number of seconds reports
	// UNKNOWN.
	RequestsPerUnit uint32
	Unit            pb.RateLimitResponse_RateLimit_Unit
	UnitMultiplier  uint32
	// Limit is the policy that decides: Limit.Limit is RequestsPerUnit,
	// Limit.Window the unit (or the window extension). It is the zero
	// Config for an unlimited rule. For requests_per_unit 0, which denies
	// every hit, it is a FixedWindow of Limit 0 and the rule's window, which
	// the responses' duration_until_reset counts down. Loading checks its
	// fields, not the algorithm's ranges (hotlimit.Config.ValidateFields):
	// those of the backend apply when a [Server] puts the rule in force.
	Limit hotlimit.Config
}

// node is one level of a domain's descriptor tree.
type node struct {
	children  map[string]*node // by "key" or "key_value"
	wildcards []wildcard       // the children whose key_value holds '*', in file order
	rule      *Rule
	// shared is the node's key_value (such as "path_/api/*") when it has
	// share_threshold: every value it matches shares one counter, named
	// as the reference names it (see sharedValue).
	shared string
}

// wildcard is a child key_value with '*' in it, split on '*' once at load.
type wildcard struct {
	key   string
	parts []string
}

// Domain is the parsed configuration of one domain, from one file.
type Domain struct {
	// Name is the domain; File the file it was read from.
	Name, File string
	// Rules lists every rule of the domain, in file order.
	Rules []*Rule
	// Warnings lists what the file holds that loads, as in the reference,
	// but is likely a mistake: a key given twice in one mapping, of which
	// the last counts.
	Warnings []string
	root     node
}

// Config is a set of domains, each from its own file. It is immutable once
// built by [NewConfig] or [LoadDir], and safe for concurrent use.
type Config struct {
	domains map[string]*Domain
	skipped []string // warnings of LoadDir about entries it did not read
	// dir and digest, set by LoadDir: the directory and the digest of the
	// files it read (see dirDigest), so that a watch of dir starts from
	// what was loaded, not from what the directory holds when it starts.
	dir    string
	digest [32]byte
}

// NewConfig joins domains into a Config. Two domains of the same name are an
// error naming both files, or, when either was not read from a file, both
// places among domains; a nil domain (as [ParseDomain] returns with its
// error), or a nil rule in a domain's Rules, is an error too.
func NewConfig(domains ...*Domain) (*Config, error) {
	c := &Config{domains: make(map[string]*Domain, len(domains))}
	at := make(map[string]int, len(domains)) // each domain's place among domains
	for i, d := range domains {
		if d == nil {
			return nil, wrapOnce(fmt.Sprintf("NewConfig: domains[%d] is nil", i), ErrConfig)
		}
		if j := slices.Index(d.Rules, nil); j >= 0 {
			return nil, wrapOnce(fmt.Sprintf("NewConfig: domains[%d] (%s): rules[%d] is nil", i, jsonobj.Clip(d.Name), j), ErrConfig)
		}
		if prev, ok := c.domains[d.Name]; ok {
			if d.File != "" && prev.File != "" { // the reference server's message
				return nil, fmt.Errorf("%s: duplicate domain '%s' in config file (also in %s): %w", d.File, jsonobj.Clip(d.Name), prev.File, ErrConfig)
			}
			return nil, wrapOnce(fmt.Sprintf("NewConfig: %s: duplicate domain '%s', also %s", place(i, d), jsonobj.Clip(d.Name), place(at[d.Name], prev)), ErrConfig)
		}
		c.domains[d.Name], at[d.Name] = d, i
	}
	return c, nil
}

// place names d, domains[i] of NewConfig, in its errors: "domains[i]", with
// the file d was read from when it was.
func place(i int, d *Domain) string {
	if d.File == "" {
		return fmt.Sprintf("domains[%d]", i)
	}
	return fmt.Sprintf("domains[%d] (file %s)", i, d.File)
}

// Domains returns the domains of c, sorted by name. A nil *Config, as
// [Server.Reload] takes it, is one without domains, as are its warnings and
// rules.
func (c *Config) Domains() []*Domain {
	if c == nil {
		return nil
	}
	out := make([]*Domain, 0, len(c.domains))
	for _, d := range c.domains {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Domain) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Warnings returns what [LoadDir] did not read in the directory (a file
// without a YAML extension, a subdirectory), and that it read no file at
// all when it did not, then the warnings of every domain, domains sorted by
// name.
func (c *Config) Warnings() []string {
	if c == nil {
		return nil
	}
	out := append([]string(nil), c.skipped...)
	if c.dir != "" && len(c.domains) == 0 {
		// Read from a directory (each file a domain), and no file: valid,
		// as in the reference, but more likely a volume mounted empty or
		// files misnamed than a service meant to limit nothing.
		out = append(out, fmt.Sprintf("%s: no *.yaml or *.yml file, so no domain: every request is answered OK, without a limit", c.dir))
	}
	for _, d := range c.Domains() {
		out = append(out, d.Warnings...)
	}
	return out
}

// Rules returns every rule of every domain, domains sorted by name.
func (c *Config) Rules() []*Rule {
	var out []*Rule
	for _, d := range c.Domains() {
		out = append(out, d.Rules...)
	}
	return out
}

// LoadDir reads every *.yaml and *.yml file of dir (not hidden, not in
// subdirectories), one domain per file, into a Config. The first bad file
// makes it fail with an error naming the file. Other entries, hidden ones
// aside, are named in the Config's [Config.Warnings]: the reference reads
// every file of its directory, whatever its name. A directory without such
// a file loads as a Config without domains, with a warning saying so.
//
// A directory laid out as Kubernetes mounts a ConfigMap or a projected
// volume (each file a symlink to ..data/<name>, ..data a symlink to a hidden
// timestamped directory that an update replaces by renaming ..data) is read
// from the directory ..data names, read again if ..data moved on during the
// read: the files of one version, whole, even while an update lands and
// removes the previous version, and named in errors and in [Domain.File] as
// dir/<name>, the paths the application sees. Only regular files are read
// (a named pipe would block the read); others are named in the warnings.
// A file larger than 16 MiB is an error.
func LoadDir(dir string) (*Config, error) {
	files, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	return files.parse()
}

// kubeData is the symlink through which a Kubernetes volume's files lead to
// the version in force.
const kubeData = "..data"

// readHook, when set by a test, runs after each configuration file is read,
// with its name.
var readHook func(name string)

// dirFiles is what a configuration directory held when read: the content
// of each file to load, the entries not read, and a digest of the files'
// names and contents.
type dirFiles struct {
	dir     string
	files   []dirFile
	skipped []string
	digest  [32]byte
}

// dirFile is one configuration file: its name in the directory, the path
// errors name, and its content.
type dirFile struct {
	name, path string
	data       []byte
}

// readDir reads dir's configuration files (see [LoadDir]). In the
// Kubernetes layout, the version ..data names is read, then ..data is read
// again: if it moved on meanwhile, the version read may have been removed
// under the read, partly (a listing that misses the files already removed
// reads without error), so it is read again from the version ..data names
// now, up to three times in all.
func readDir(dir string) (*dirFiles, error) {
	link := filepath.Join(dir, kubeData)
	for attempt := 0; ; attempt++ {
		target, err := os.Readlink(link)
		if err != nil { // no ..data symlink: a plain directory
			return readFiles(dir, dir)
		}
		if readHook != nil {
			readHook(kubeData)
		}
		src := target
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, target)
		}
		files, err := readFiles(dir, src)
		if now, _ := os.Readlink(link); now == target {
			// ..data named the version read throughout, and the kubelet
			// removes a version only once ..data names another: it was
			// whole, and an error reading it is the version's.
			return files, err
		}
		if attempt == 2 {
			if err == nil {
				err = fmt.Errorf("envoyrls: config directory %s: %s changed during each of 3 reads", dir, kubeData)
			}
			return nil, err
		}
	}
}

// readFiles reads the configuration files of src, naming them as files of
// dir.
func readFiles(dir, src string) (*dirFiles, error) {
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("envoyrls: config directory: %w", err)
	}
	out := &dirFiles{dir: dir}
	h := sha256.New()
	for _, e := range ents { // sorted by name, so the digest is of the directory, not of the order read
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path, from := filepath.Join(dir, name), filepath.Join(src, name)
		mode := e.Type()
		yamlName := strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
		if mode&fs.ModeSymlink != 0 {
			fi, err := os.Stat(from)
			if err != nil && !yamlName { // a link that leads nowhere, named as nothing read
				out.skipped = append(out.skipped, fmt.Sprintf("%s: a symbolic link to nothing readable, not read (%v)", path, err))
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envoyrls: config directory: %w", err)
			}
			mode = fi.Mode().Type()
		}
		if mode.IsDir() {
			out.skipped = append(out.skipped, fmt.Sprintf("%s: a directory, not read: the configuration is the *.yaml and *.yml files of %s itself", path, dir))
			continue
		}
		if !yamlName {
			out.skipped = append(out.skipped, fmt.Sprintf("%s: not read: only *.yaml and *.yml files are", path))
			continue
		}
		if !mode.IsRegular() { // a named pipe or a device would block the read, or never end it
			out.skipped = append(out.skipped, fmt.Sprintf("%s: not a regular file (%v), not read", path, mode))
			continue
		}
		data, err := readFile(path, from)
		if err != nil {
			return nil, fmt.Errorf("envoyrls: config directory: %w", err)
		}
		if readHook != nil {
			readHook(name)
		}
		hashFile(h, name, data)
		out.files = append(out.files, dirFile{name: name, path: path, data: data})
	}
	out.digest = [32]byte(h.Sum(nil))
	return out, nil
}

// maxFileSize is the largest configuration file read: 16 MiB, thousands of
// times a domain written by hand, and far less than a log or a dump saved
// in the directory by mistake, which would otherwise be read whole at every
// poll.
const maxFileSize = 16 << 20

// readFile reads the configuration file from, named path in errors, up to
// maxFileSize bytes: a larger one is an error, read no further.
func readFile(path, from string) ([]byte, error) {
	f, err := os.Open(from)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most a configuration file may hold", path, maxFileSize>>20)
	}
	return data, nil
}

// hashFile adds a file's name and content to a directory's digest.
func hashFile(h hash.Hash, name string, data []byte) {
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(data)
	h.Write([]byte{0})
}

// parse builds the Config of the files read.
func (f *dirFiles) parse() (*Config, error) {
	domains := make([]*Domain, 0, len(f.files))
	for _, file := range f.files {
		d, err := ParseDomain(file.path, file.data)
		if err != nil {
			return nil, err
		}
		domains = append(domains, d)
	}
	c, err := NewConfig(domains...)
	if err != nil {
		return nil, err
	}
	c.skipped, c.dir, c.digest = f.skipped, f.dir, f.digest
	return c, nil
}

// validKeys are the keys a configuration may hold, anywhere but under
// metadata: the reference server's, which it takes at any level.
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true,
	"quota_mode": true, "name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true, "metadata": true,
}

// extensionKeys are hotlimit's keys, which a configuration may hold only
// directly under rate_limit: anywhere else they would be read by nothing,
// and the reference rejects them as unknown.
var extensionKeys = map[string]bool{"algorithm": true, "burst": true, "window": true}

type yamlReplace struct {
	Name string `yaml:"name"`
}

type yamlRateLimit struct {
	RequestsPerUnit uint32        `yaml:"requests_per_unit"`
	Unit            string        `yaml:"unit"`
	Unlimited       bool          `yaml:"unlimited"`
	Name            string        `yaml:"name"`
	Replaces        []yamlReplace `yaml:"replaces"`
	Algorithm       string        `yaml:"algorithm"`
	Burst           int           `yaml:"burst"`
	Window          string        `yaml:"window"`
}

type yamlDescriptor struct {
	Key            string           `yaml:"key"`
	Value          string           `yaml:"value"`
	RateLimit      *yamlRateLimit   `yaml:"rate_limit"`
	Descriptors    []yamlDescriptor `yaml:"descriptors"`
	ShadowMode     bool             `yaml:"shadow_mode"`
	QuotaMode      bool             `yaml:"quota_mode"`
	DetailedMetric bool             `yaml:"detailed_metric"`
	ValueToMetric  bool             `yaml:"value_to_metric"`
	ShareThreshold bool             `yaml:"share_threshold"`
	// Metadata is not read: left a node, so that decoding a mapping of many
	// keys does not take time quadratic in them (the decoder looks for each
	// key among those before); checkMetadata checks it as the reference.
	Metadata yaml.Node `yaml:"metadata"`
}

type yamlRoot struct {
	Domain      string           `yaml:"domain"`
	Descriptors []yamlDescriptor `yaml:"descriptors"`
}

// toInt converts a count read from a request or a configuration to an int,
// or reports false when this platform's int cannot hold it: above 2^31-1 on
// a 32-bit platform.
func toInt(v uint64) (int, bool) {
	if v > math.MaxInt {
		return 0, false
	}
	return int(v), true
}

// configError formats a load error as the reference server does, prefixed
// by the file: "file: message".
func configError(file, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", file, fmt.Sprintf(format, args...), ErrConfig)
}

// ParseDomain reads one configuration file in the reference server's
// format; file names it in errors. Every error wraps [ErrConfig].
func ParseDomain(file string, data []byte) (*Domain, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, configError(file, "error loading config file: %v", err)
	}
	var warnings []string
	if len(doc.Content) > 0 {
		if err := checkMapKeys(file, &doc, map[*yaml.Node]bool{}, map[*yaml.Node]bool{}); err != nil {
			return nil, err
		}
		// Every value as its decoder fills the reference's structs, which
		// takes all, those that a later key (so before lastKeyWins drops
		// them) or merge key replaces included; then a float, which it
		// rejects only among the values that count (it checks them in
		// plain maps, once merge keys are applied and later keys have
		// replaced earlier ones, and its decoder fills an integer with a
		// float), in the file laid out so. Its decoder's errors come after
		// that check, as there: kept until then.
		undecodable, err := validateKeys(file, doc.Content[0], false, nil)
		if err != nil {
			return nil, err
		}
		warnings = lastKeyWins(file, doc.Content[0], map[*yaml.Node]bool{}, nil)
		laid := &structLayout{done: map[*yaml.Node]bool{}, replace: true, mergedBy: map[*yaml.Node][]*yaml.Node{}}
		laid.node(&doc)
		if _, err := validateKeys(file, doc.Content[0], true, laid.mergedBy); err != nil {
			return nil, err
		}
		if undecodable != nil {
			return nil, undecodable
		}
	}
	// The reference checks the keys of the file read into plain maps (done
	// above) and loads the file read into its structs, where a key given
	// again or merged in later wins and a rate_limit given again adds to
	// the one before: load a second reading laid out so.
	var decoded yaml.Node
	if err := yaml.Unmarshal(data, &decoded); err != nil {
		return nil, configError(file, "error loading config file: %v", err)
	}
	(&structLayout{done: map[*yaml.Node]bool{}}).node(&decoded)
	var root yamlRoot
	if err := decoded.Decode(&root); err != nil {
		return nil, configError(file, "error loading config file: %v", err)
	}
	if err := checkMetadata(file, root.Descriptors); err != nil {
		return nil, err
	}
	if root.Domain == "" {
		return nil, configError(file, "config file cannot have empty domain")
	}
	d := &Domain{Name: root.Domain, File: file, Warnings: warnings}
	if err := d.load(&d.root, root.Domain+".", root.Descriptors); err != nil {
		return nil, err
	}
	return d, nil
}

// checkMetadata rejects a metadata that is not a mapping (nor null), as
// the reference's decoder does, which reads it into a map.
func checkMetadata(file string, ds []yamlDescriptor) error {
	for i := range ds {
		m := target(&ds[i].Metadata)
		if m.Kind != 0 && m.Kind != yaml.MappingNode && !(m.Kind == yaml.ScalarNode && m.Tag == "!!null") {
			what := m.Tag
			if m.Kind == yaml.ScalarNode {
				what += " `" + jsonobj.Clip(m.Value) + "`"
			}
			return configError(file, "error loading config file: yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into map[string]interface {}", m.Line, what)
		}
		if err := checkMetadata(file, ds[i].Descriptors); err != nil {
			return err
		}
	}
	return nil
}

// structLayout rewrites the mappings of a YAML tree into what the
// reference's decoder (gopkg.in/yaml.v2) fills its structs with, so that
// ours, which takes a key given first over one merged in later and rejects
// a key given twice, reads the same: each mapping's keys in file order, a
// merge key's (`<<: *anchor`) in its place (of a list of mappings, the last
// first, so that the first wins), a later one replacing an earlier one,
// except that a rate_limit mapping given again, or merged in, adds its keys
// to the one before, as that decoder fills the struct it already has.
//
// With replace, a rate_limit given again replaces the one before, as in the
// plain maps the reference checks the keys of, and a merge key whose value
// is neither a mapping nor a list of mappings is kept, for validateKeys to
// reject.
type structLayout struct {
	done      map[*yaml.Node]bool // the nodes laid out, or being laid out
	expanding map[*yaml.Node]bool // the mappings whose pairs are being set
	replace   bool
	// mergedBy holds, for each mapping laid out, by pair, the alias of
	// the merge key (<<: *anchor) of that mapping that brought the pair
	// in, nil for a pair of its own: where the pair was merged, which the
	// value's own line, the anchor's, does not say. Through anchors that
	// merge others, it is the alias merged in this mapping, the outermost.
	// Kept only when not nil.
	mergedBy map[*yaml.Node][]*yaml.Node
}

// node lays out n and every node under it.
func (l *structLayout) node(n *yaml.Node) {
	if n == nil || l.done[n] {
		return
	}
	l.done[n] = true
	if n.Kind == yaml.AliasNode {
		l.node(n.Alias)
		return
	}
	for i, c := range n.Content {
		// A metadata value is kept as a node, unread: not laid out, for
		// only the keys outside it are checked, and in it a merge of
		// mappings whose keys are lists or mappings (never the same key
		// twice) would grow with each level, as fast as a billion laughs.
		if i%2 == 1 && n.Kind == yaml.MappingNode && isMetadataKey(n.Content[i-1]) {
			continue
		}
		l.node(c)
	}
	if n.Kind == yaml.MappingNode {
		var out pairList
		l.pairs(n, &out, nil)
		n.Content = out.nodes
		if l.mergedBy != nil && slices.ContainsFunc(out.by, func(a *yaml.Node) bool { return a != nil }) {
			l.mergedBy[n] = out.by
		}
	}
}

// isMetadataKey reports whether k is the key metadata, whose value is free.
func isMetadataKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Tag == "!!str" && k.Value == "metadata"
}

// pairList is a mapping's content being laid out: key and value nodes,
// where each scalar key is among them, and by pair the alias that merged
// it in (see structLayout.mergedBy).
type pairList struct {
	nodes []*yaml.Node
	at    map[string]int // by tag and value, the index of the key in nodes
	by    []*yaml.Node   // by pair (index in nodes / 2)
}

// pairs sets in out the pairs of mapping m in order, merge keys expanded.
// A mapping that merges itself, through an alias, is expanded once. by is
// the alias that merged m in, nil for m in its own place: the pairs are
// noted as brought in by it, else as m's were (by the alias of a merge key
// of m, for a mapping m laid out already).
func (l *structLayout) pairs(m *yaml.Node, out *pairList, by *yaml.Node) {
	if l.expanding[m] {
		return
	}
	if l.expanding == nil {
		l.expanding = map[*yaml.Node]bool{}
	}
	l.expanding[m] = true
	defer delete(l.expanding, m)
	own := l.mergedBy[m]
	// through returns the alias that brings in what n, the value of a
	// merge key of m or an item of it, merges: by, else n's own alias.
	through := func(n *yaml.Node) *yaml.Node {
		if by == nil && n.Kind == yaml.AliasNode {
			return n
		}
		return by
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!merge" {
			pairBy := by
			if pairBy == nil && i/2 < len(own) {
				pairBy = own[i/2]
			}
			l.set(out, k, v, pairBy)
			continue
		}
		switch t := target(v); t.Kind {
		case yaml.MappingNode:
			l.node(t)
			l.pairs(t, out, through(v))
		case yaml.SequenceNode:
			if slices.ContainsFunc(t.Content, func(e *yaml.Node) bool { return target(e).Kind != yaml.MappingNode }) {
				l.set(out, k, v, nil) // rejected by validateKeys
				continue
			}
			for j := len(t.Content) - 1; j >= 0; j-- {
				if e := target(t.Content[j]); e.Kind == yaml.MappingNode {
					l.node(e)
					l.pairs(e, out, through(t.Content[j]))
				}
			}
		default: // rejected by validateKeys
			l.set(out, k, v, nil)
		}
	}
}

// set gives key k the value v in out, brought in by the alias by (nil for
// none).
func (l *structLayout) set(out *pairList, k, v, by *yaml.Node) {
	if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" { // rejected by validateKeys
		out.nodes = append(out.nodes, k, v)
		out.by = append(out.by, by)
		return
	}
	id := k.Tag + ":" + k.Value
	j, given := out.at[id]
	if !given {
		if out.at == nil {
			out.at = map[string]int{}
		}
		out.at[id] = len(out.nodes)
		out.nodes = append(out.nodes, k, v)
		out.by = append(out.by, by)
		return
	}
	old := target(out.nodes[j+1])
	if nv := target(v); !l.replace && k.Value == "rate_limit" && old.Kind == yaml.MappingNode && nv.Kind == yaml.MappingNode {
		var merged pairList
		l.pairs(old, &merged, nil)
		l.pairs(nv, &merged, nil)
		v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: nv.Line, Column: nv.Column, Content: merged.nodes}
	}
	out.nodes[j+1] = v
	out.by[j/2] = by
}

// checkMapKeys rejects, anywhere under n, metadata included, what the
// reference's YAML decoder cannot read into its plain maps: a mapping key
// that is a list or a mapping (a Go map cannot hold it), and an alias, merge
// key or not, within the node it names (an anchor containing itself). done
// holds the nodes already walked, which aliases may share; within the nodes
// being walked, n's ancestors and n.
func checkMapKeys(file string, n *yaml.Node, done, within map[*yaml.Node]bool) error {
	if n.Kind == yaml.AliasNode {
		if within[n.Alias] {
			return configError(file, "error loading config file: yaml: line %d: anchor '%s' value contains itself", n.Line, jsonobj.Clip(n.Value))
		}
		return nil // the anchored node is walked where it is defined
	}
	if done[n] {
		return nil
	}
	done[n], within[n] = true, true
	defer delete(within, n)
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			if k := target(c); k.Kind == yaml.SequenceNode || k.Kind == yaml.MappingNode {
				return configError(file, "error loading config file: yaml: line %d: invalid map key: a list or a mapping", c.Line)
			}
			if c.Kind == yaml.ScalarNode && c.Tag == "!!merge" && i+1 < len(n.Content) && !mergeable(n.Content[i+1]) {
				return configError(file, "error loading config file: yaml: line %d: map merge requires map or sequence of maps as the value: merge key '<<' takes a mapping, an alias of one, or a list of those", c.Line)
			}
		}
		if err := checkMapKeys(file, c, done, within); err != nil {
			return err
		}
	}
	return nil
}

// mergeable reports whether the reference's YAML decoder merges v, the
// value of a merge key: a mapping, an alias of one, or a list of those. It
// refuses anything else wherever the merge is, in a value that counts or
// not: an alias of a list (of mappings or empty) and a list holding a list
// or a scalar included.
func mergeable(v *yaml.Node) bool {
	if v.Kind == yaml.SequenceNode {
		for _, c := range v.Content {
			if c.Kind == yaml.SequenceNode || target(c).Kind != yaml.MappingNode {
				return false
			}
		}
		return true
	}
	return target(v).Kind == yaml.MappingNode
}

// lastKeyWins removes from every mapping under n the pairs whose key the
// mapping gives again later, so that the last counts, as the reference's YAML
// decoder reads them (ours would reject the file), and returns a warning for
// each. done holds the mappings already seen, which aliases may share.
func lastKeyWins(file string, n *yaml.Node, done map[*yaml.Node]bool, warnings []string) []string {
	if n.Kind == yaml.AliasNode || done[n] {
		return warnings // the anchored node is walked where it is defined
	}
	done[n] = true
	if n.Kind == yaml.MappingNode {
		last := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag != "!!merge" {
				last[k.Tag+":"+k.Value] = i
			}
		}
		if len(last) < len(n.Content)/2 {
			kept := n.Content[:0:0]
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if j, ok := last[k.Tag+":"+k.Value]; ok && j != i && k.Tag != "!!merge" {
					outcome := "which counts"
					if k.Value == "rate_limit" && target(n.Content[i+1]).Kind == yaml.MappingNode && target(n.Content[j+1]).Kind == yaml.MappingNode {
						outcome = "whose keys count over these" // see structLayout
					}
					warnings = append(warnings, fmt.Sprintf("%s: line %d: key '%s' is given again at line %d, %s",
						file, k.Line, k.Value, n.Content[j].Line, outcome))
					continue
				}
				kept = append(kept, k, n.Content[i+1])
			}
			n.Content = kept
		}
	}
	for _, c := range n.Content {
		warnings = lastKeyWins(file, c, done, warnings)
	}
	return warnings
}

// validateKeys rejects a mapping key outside validKeys at any depth, except
// under metadata, whose content is free. Aliases are checked as the mappings
// they stand for, and a merge key (`<<: *anchor`) as the keys it merges, as
// the reference sees them once its YAML decoder has resolved both.
//
// A float is rejected only with floats: see ParseDomain. Without floats,
// it walks the file as the reference's decoder fills its structs, replaced
// values included: it rejects no key (a key the structs have no field for
// is skipped, as there; the keys are checked with floats, among the values
// that count) and returns the first value the decoder cannot fill its
// structs with (see leaf and decodes), as undecodable, an error it reports
// only once the values that count are checked. mergedBy is structLayout's, for a
// file laid out, nil otherwise.
func validateKeys(file string, n *yaml.Node, floats bool, mergedBy map[*yaml.Node][]*yaml.Node) (undecodable, err error) {
	v := keyValidator{file: file, seen: map[seenKey]bool{}, floats: floats, mergedBy: mergedBy}
	err = v.check(n, "")
	return v.undecodable, err
}

// keyValidator walks a YAML tree for validateKeys. seen holds the anchored
// nodes already reached through an alias, so that each is checked once in
// each of the two places whose keys differ (under rate_limit, where the
// extension keys are valid, and elsewhere): an alias cannot make the walk
// loop or grow with the number of aliases, nor bring the extension keys
// checked under rate_limit anywhere else.
type keyValidator struct {
	file   string
	seen   map[seenKey]bool
	floats bool
	// undecodable is the first value the reference's decoder cannot fill
	// its structs with; see leaf.
	undecodable error
	// via is the first alias the walk went through to the node it is
	// checking, if any, and mergedBy structLayout's (see there): for an
	// error to say where a value that an anchor holds was used.
	via      aliasUse
	mergedBy map[*yaml.Node][]*yaml.Node
}

// aliasUse is an alias (or a merge key's alias) met as the value, or a value,
// of the key parent ("" when the error names that key already).
type aliasUse struct {
	alias  *yaml.Node
	parent string
	merged bool
}

// where says where u brought its anchor's value in, "" for no alias: the
// value's own line is the anchor's.
func (u aliasUse) where() string {
	switch {
	case u.alias == nil:
		return ""
	case u.merged:
		return fmt.Sprintf(" (merged in by <<: *%s at line %d, under %s)", jsonobj.Clip(u.alias.Value), u.alias.Line, u.parent)
	case u.parent == "":
		return fmt.Sprintf(" (reached through *%s at line %d)", jsonobj.Clip(u.alias.Value), u.alias.Line)
	}
	return fmt.Sprintf(" (reached through *%s at line %d, under %s)", jsonobj.Clip(u.alias.Value), u.alias.Line, u.parent)
}

// seenKey is an anchored node reached under rate_limit, or elsewhere.
type seenKey struct {
	n           *yaml.Node
	inRateLimit bool
}

// resolve returns the node an alias stands for, and whether the walk should
// go on into it, as the value of the key parent: false for an anchor
// already checked through an alias in such a place.
func (v *keyValidator) resolve(n *yaml.Node, parent string) (*yaml.Node, bool) {
	if n.Kind != yaml.AliasNode || n.Alias == nil {
		return n, true
	}
	k := seenKey{n.Alias, parent == "rate_limit"}
	if v.seen[k] {
		return n.Alias, false
	}
	v.seen[k] = true
	return n.Alias, true
}

// target returns the node an alias stands for, else n.
func target(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// check checks n, the value of the key parent ("" for the document).
func (v *keyValidator) check(n *yaml.Node, parent string) error {
	if v.via.alias == nil && n.Kind == yaml.AliasNode {
		v.via = aliasUse{n, parent, false}
		defer func() { v.via = aliasUse{} }()
	}
	n, walk := v.resolve(n, parent)
	if !walk {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if n.Kind == yaml.SequenceNode {
				if r := target(c); r.Kind != yaml.MappingNode {
					if elem, ok := elemTypes[parent]; ok && !v.floats {
						// an item of a list of structs, which a null
						// leaves a zero struct; see decodes
						if tag, _ := yaml11(r); r.Kind != yaml.ScalarNode || tag != "!!null" {
							v.undecodableAs(r, "config."+elem)
						}
						continue
					}
					return configError(v.file, "config error, yaml file contains list of type other than map: %s", jsonobj.Clip(goValue(r)))
				}
			}
			if err := v.check(c, parent); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				if err := v.merged(val, parent); err != nil {
					return err
				}
				continue
			}
			known := k.Kind == yaml.ScalarNode && k.Tag == "!!str" && (validKeys[k.Value] || extensionKeys[k.Value] && parent == "rate_limit")
			if !known && !v.floats {
				// Its decoder skips a key its struct has no field
				// for; the reference checks the keys only of the
				// values that count, in the file laid out.
				continue
			}
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return configError(v.file, "config error, key is not of type string: %s", jsonobj.Clip(goValue(k)))
			}
			if !known {
				return configError(v.file, "config error, unknown key '%s'", jsonobj.Clip(k.Value))
			}
			if !v.floats && !v.decodes(k.Value, val) {
				continue
			}
			if k.Value == "metadata" {
				continue
			}
			var by *yaml.Node
			if pairs := v.mergedBy[n]; i/2 < len(pairs) {
				by = pairs[i/2]
			}
			if err := v.leaf(k.Value, val, parent, by); err != nil {
				return err
			}
			if by != nil && v.via.alias == nil {
				// The merge key that brought the pair in is one of this
				// mapping's, the value of parent: the errors below name
				// it there, not under the key of the pair.
				v.via = aliasUse{by, parent, true}
				err := v.check(val, k.Value)
				v.via = aliasUse{}
				if err != nil {
					return err
				}
				continue
			}
			if err := v.check(val, k.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// goValue formats n as the reference names a value in its errors: as Go
// prints the value decoded, <nil> for a null, [a b] for a list.
func goValue(n *yaml.Node) string {
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value
	}
	return fmt.Sprint(v)
}

// boolKeys are the keys whose value is a boolean.
var boolKeys = map[string]bool{
	"unlimited": true, "shadow_mode": true, "quota_mode": true,
	"detailed_metric": true, "value_to_metric": true, "share_threshold": true,
}

// leaf rejects the scalar values the reference does not load: it reads the
// file into plain values first and takes only strings, integers (of int64),
// booleans and nulls, so a float anywhere is an error there (with floats);
// then it fills its structs with every value, those that a later key or a
// merge key replaces included, and its YAML 1.1 decoder (gopkg.in/yaml.v2)
// fills a requests_per_unit (a uint32) only with an integer or a float in
// its range, and a boolean key only with a boolean, which it reads in yes,
// on or off too, unquoted and untagged. Without floats, such a value is
// kept as v.undecodable, an error the reference gives once the values that
// count are checked: so a requests_per_unit past 64 bits (0x1ffffffffffffffff,
// which both decoders read as a string) is rejected where a later key
// replaces it too, as there.
//
// The value of a key in a mapping that an alias or a merge key brought in,
// or one given as an alias, has its anchor's line: the error then says
// where the alias was used, too: by, the alias of the merge key that
// brought the pair into its mapping, if any.
func (v *keyValidator) leaf(key string, val *yaml.Node, parent string, by *yaml.Node) error {
	n := target(val)
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	where := v.via
	if where.alias == nil {
		if by != nil {
			where = aliasUse{by, parent, true}
		} else if val.Kind == yaml.AliasNode {
			where = aliasUse{alias: val} // the key is named already
		}
	}
	switch n.Tag {
	case "!!float":
		if v.floats {
			// The reference's words, then where and what, which it omits.
			// An integer past what uint64 holds, or below int64's least,
			// is tagged a float by the YAML decoder: it is named as the
			// integer it was written.
			if decimalInteger(n.Value) && !fitsInt64(n.Value) {
				return v.pastInt64(key, n, where)
			}
			return configError(v.file, "error checking config: line %d: %s %s%s is a float: %s", n.Line, key, jsonobj.Clip(n.Value), where.where(), floatHint(key))
		}
	case "!!int":
		if !fitsInt64(n.Value) {
			return v.pastInt64(key, n, where)
		}
	}
	into := map[bool]string{true: "bool", false: "uint32"}[boolKeys[key]]
	if v.floats || v.undecodable != nil || !boolKeys[key] && key != "requests_per_unit" {
		return nil
	}
	if !fills(into, n) {
		v.undecodableAs(n, into)
	}
	return nil
}

// numberRanges are the ranges of the fields that hold a number, by key, as
// an error names them.
var numberRanges = map[string]string{
	"requests_per_unit": "a uint32's range, 0 to 4294967295",
	"burst":             fmt.Sprintf("a burst's range, 0 to %d", math.MaxInt), // an int, never negative
}

// fitsInt64 reports whether s, an integer as the YAML decoder reads one
// (a sign, a 0x, 0o or 0b prefix, underscores), is one of int64's: the
// reference takes no other.
func fitsInt64(s string) bool {
	_, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
	return !errors.Is(err, strconv.ErrRange)
}

// pastInt64 is the error for n, the value of key, an integer that int64
// cannot hold, so that the reference refuses it: for a field that holds a
// number, its range; for a boolean, the two values it takes; for the
// window, the unit or the algorithm, what it takes (wordHints); for another
// string, where n lies and how to make it a string.
func (v *keyValidator) pastInt64(key string, n *yaml.Node, where aliasUse) error {
	what := ""
	if r, ok := numberRanges[key]; ok {
		what = "is outside " + r
	} else if boolKeys[key] {
		what = "is an integer, not a boolean: write true or false"
	} else if h, ok := wordHints[key]; ok {
		what = "is an integer: " + h
	} else {
		what = "is " + integerPlace(n.Value) + ": quote it for a string"
	}
	return configError(v.file, "error checking config: line %d: %s %s%s %s", n.Line, key, jsonobj.Clip(n.Value), where.where(), what)
}

// integerPlace says where s, an integer that int64 cannot hold, lies: past
// int64's largest within uint64's, or past 64 bits either way.
func integerPlace(s string) string {
	b, ok := new(big.Int).SetString(strings.ReplaceAll(s, "_", ""), 0)
	switch {
	case ok && b.Sign() < 0:
		return fmt.Sprintf("an integer below int64's least, %d", int64(math.MinInt64))
	case ok && b.IsUint64():
		return fmt.Sprintf("an integer past int64's largest, %d", int64(math.MaxInt64))
	}
	return "an integer past 64 bits"
}

// wordHints are the advice for a number given to a field that takes words
// of its own, by key: neither an integer nor a quoted number is a duration,
// a unit or an algorithm.
var wordHints = map[string]string{
	"window":    "write a Go duration such as 90s or 1h30m",
	"unit":      "write second, minute, hour, day, week, month or year",
	"algorithm": "write TokenBucket, GCRA, FixedWindow, SlidingLog or SlidingCounter",
}

// floatHint is what the error for a float as the value of key advises.
func floatHint(key string) string {
	switch {
	case numberRanges[key] != "":
		return "write an integer"
	case boolKeys[key]:
		return "write true or false"
	case wordHints[key] != "":
		return wordHints[key]
	}
	return "write an integer, or quote it for a string"
}

// fieldTypes are the Go types of the reference's struct fields that hold a
// list or a mapping, by key, as its decoder names them; the keys not here
// hold a scalar (see leaf). elemTypes are the types of the lists' items.
var (
	fieldTypes = map[string]string{
		"descriptors": "[]config.YamlDescriptor", "replaces": "[]config.yamlReplaces",
		"rate_limit": "config.YamlRateLimit", "metadata": "map[string]interface {}",
	}
	elemTypes = map[string]string{"descriptors": "YamlDescriptor", "replaces": "yamlReplaces"}
)

// decodes reports whether the reference's decoder fills the field of key
// with val, a list, a mapping or a null where its struct has a list or a
// mapping, a scalar or a null where it has a scalar: the kind it takes, so
// that the walk goes on into it. Otherwise the value is kept as
// undecodable, as the reference refuses it even where a later key or a
// merge key replaces it, and the walk skips it, as its decoder does.
func (v *keyValidator) decodes(key string, val *yaml.Node) bool {
	n := target(val)
	if n.Kind == yaml.ScalarNode {
		if tag, _ := yaml11(n); tag == "!!null" {
			return true // leaves the field as it is
		}
	}
	into, ok := fieldTypes[key]
	var fits bool
	switch {
	case !ok:
		fits = n.Kind == yaml.ScalarNode
		into = scalarTypes[key]
		if into == "" {
			into = "string"
		}
	case key == "descriptors" || key == "replaces":
		fits = n.Kind == yaml.SequenceNode
	default:
		fits = n.Kind == yaml.MappingNode
	}
	if !fits {
		v.undecodableAs(n, into)
	}
	return fits
}

// scalarTypes are the Go types of the struct fields that hold a scalar
// other than a string, by key.
var scalarTypes = map[string]string{
	"requests_per_unit": "uint32", "burst": "int",
	"unlimited": "bool", "shadow_mode": "bool", "quota_mode": "bool",
	"detailed_metric": "bool", "value_to_metric": "bool", "share_threshold": "bool",
}

// undecodableAs keeps as v.undecodable, unless it holds one already, the
// error of the reference's decoder for n, which it cannot fill a Go value
// of type into with: a scalar named by its tag and value as it quotes them,
// a list or a mapping by its tag alone.
func (v *keyValidator) undecodableAs(n *yaml.Node, into string) {
	if v.undecodable != nil {
		return
	}
	what := "!!seq"
	switch n.Kind {
	case yaml.MappingNode:
		what = "!!map"
	case yaml.ScalarNode:
		tag, _ := yaml11(n)
		what = fmt.Sprintf("%s `%s`", tag, shown(n.Value))
	}
	v.undecodable = configError(v.file, "error loading config file: yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into %s", n.Line, what, into)
}

// fills reports whether the reference's decoder fills a Go value of type
// into ("uint32" or "bool") with the scalar n.
func fills(into string, n *yaml.Node) bool {
	_, val := yaml11(n)
	switch val := val.(type) {
	case nil:
		return true // a null leaves the field as it is
	case bool:
		return into == "bool"
	case int64:
		return into == "uint32" && val >= 0 && val <= math.MaxUint32
	case uint64:
		return into == "uint32" && val <= math.MaxUint32
	case float64:
		// converted to uint64, which truncates toward zero, then checked
		// against uint32's range
		return into == "uint32" && val > -1 && val < 1<<32
	}
	return false
}

// yaml11 returns the tag and the value (nil, a bool, an int64, a uint64, a
// float64, or a string for anything else) that the reference's YAML 1.1
// decoder reads the scalar n as: a quoted scalar is a string; a plain one
// is a null, a boolean (yes, no, on, off, y, n, true and false, in three
// casings), an integer in any base strconv reads (underscores dropped), a
// float, or else a string; a tagged one is what its tag says.
func yaml11(n *yaml.Node) (string, any) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "!!str", n.Value
	}
	tagged := n.Style&yaml.TaggedStyle != 0
	if tagged && n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!bool" && n.Tag != "!!null" {
		return n.Tag, n.Value
	}
	if !tagged {
		switch n.Value {
		case "", "~", "null", "Null", "NULL":
			return "!!null", nil
		case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
			return "!!bool", true
		case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
			return "!!bool", false
		case ".nan", ".NaN", ".NAN":
			return "!!float", math.NaN()
		case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
			return "!!float", math.Inf(1)
		case "-.inf", "-.Inf", "-.INF":
			return "!!float", math.Inf(-1)
		}
		if n.Tag == "!!timestamp" {
			return n.Tag, n.Value
		}
	}
	plain := strings.ReplaceAll(n.Value, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return "!!int", i
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return "!!int", u
	}
	if yaml11Float.MatchString(plain) {
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			return "!!float", f
		}
	}
	if tagged {
		return n.Tag, n.Value
	}
	return "!!str", n.Value
}

// yaml11Float is how the reference's YAML decoder writes a float.
var yaml11Float = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// shown is a value as the reference's YAML decoder quotes it in an error:
// past 10 bytes, its first 7 and "...".
func shown(s string) string {
	if len(s) > 10 {
		return s[:7] + "..."
	}
	return s
}

// decimalInteger reports whether s is written as a decimal integer: an
// optional sign, then digits, with underscores between them.
func decimalInteger(s string) bool {
	s = strings.TrimLeft(s, "+-")
	digits := strings.ReplaceAll(s, "_", "")
	return digits != "" && strings.Trim(digits, "0123456789") == "" && s[0] != '_'
}

// merged checks the value of a merge key: a mapping, or a list of mappings,
// each usually an alias, whose keys join the mapping holding the merge key,
// the value of the key parent. checkMapKeys has refused any other value
// (see mergeable).
func (v *keyValidator) merged(n *yaml.Node, parent string) error {
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			if err := v.merged(c, parent); err != nil {
				return err
			}
		}
		return nil
	}
	if v.via.alias == nil && n.Kind == yaml.AliasNode {
		v.via = aliasUse{n, parent, true}
		defer func() { v.via = aliasUse{} }()
	}
	return v.check(n, parent)
}

// load adds descriptors under n, whose full key is parent (ending in '.').
func (d *Domain) load(n *node, parent string, descriptors []yamlDescriptor) error {
	for _, yd := range descriptors {
		if yd.Key == "" {
			return configError(d.File, "descriptor has empty key")
		}
		final := yd.Key
		if yd.Value != "" {
			final += "_" + yd.Value
		}
		full := parent + final
		if n.children == nil {
			n.children = map[string]*node{}
		}
		if _, dup := n.children[final]; dup {
			return configError(d.File, "duplicate descriptor composite key '%s'", jsonobj.Clip(full))
		}
		if yd.ShareThreshold && !strings.Contains(final, "*") {
			return configError(d.File, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", jsonobj.Clip(final))
		}
		child := &node{}
		if yd.ShareThreshold {
			child.shared = final
		}
		if yd.RateLimit != nil {
			r, err := d.rule(full, &yd)
			if err != nil {
				return err
			}
			child.rule = r
			d.Rules = append(d.Rules, r)
		}
		if strings.Contains(final, "*") {
			n.wildcards = append(n.wildcards, wildcard{key: final, parts: strings.Split(final, "*")})
		}
		if err := d.load(child, full+".", yd.Descriptors); err != nil {
			return err
		}
		n.children[final] = child
	}
	return nil
}

// units maps the reference's unit names to their durations: a month is 30
// days and a year 365, as the reference counts them.
var units = []struct {
	unit pb.RateLimitResponse_RateLimit_Unit
	d    time.Duration
}{
	{pb.RateLimitResponse_RateLimit_YEAR, 365 * 24 * time.Hour},
	{pb.RateLimitResponse_RateLimit_MONTH, 30 * 24 * time.Hour},
	{pb.RateLimitResponse_RateLimit_WEEK, 7 * 24 * time.Hour},
	{pb.RateLimitResponse_RateLimit_DAY, 24 * time.Hour},
	{pb.RateLimitResponse_RateLimit_HOUR, time.Hour},
	{pb.RateLimitResponse_RateLimit_MINUTE, time.Minute},
	{pb.RateLimitResponse_RateLimit_SECOND, time.Second},
}

// UnitDuration returns how long unit is; 0 for UNKNOWN or an invalid unit.
func UnitDuration(unit pb.RateLimitResponse_RateLimit_Unit) time.Duration {
	for _, u := range units {
		if u.unit == unit {
			return u.d
		}
	}
	return 0
}

// unitOf expresses w as the largest unit dividing it times a multiplier;
// UNKNOWN and 0 when no unit divides it.
func unitOf(w time.Duration) (pb.RateLimitResponse_RateLimit_Unit, uint32) {
	for _, u := range units {
		if w%u.d == 0 && w/u.d <= 1<<32-1 {
			return u.unit, uint32(w / u.d)
		}
	}
	return pb.RateLimitResponse_RateLimit_UNKNOWN, 0
}

// rule builds the Rule of yd, whose full key is full.
func (d *Domain) rule(full string, yd *yamlDescriptor) (*Rule, error) {
	yr := yd.RateLimit
	errKey := jsonobj.Clip(full) // full, as errors quote it
	r := &Rule{
		Domain: d.Name, Key: full, Name: yr.Name, Unlimited: yr.Unlimited,
		ShadowMode: yd.ShadowMode, QuotaMode: yd.QuotaMode, DetailedMetric: yd.DetailedMetric,
		RequestsPerUnit: yr.RequestsPerUnit,
	}
	v, ok := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(yr.Unit)]
	validUnit := ok && v != int32(pb.RateLimitResponse_RateLimit_UNKNOWN)
	switch {
	case yr.Unlimited && validUnit:
		return nil, configError(d.File, "should not specify rate limit unit when unlimited")
	case yr.Unlimited && (yr.Window != "" || yr.Algorithm != "" || yr.Burst != 0):
		return nil, configError(d.File, "%s: should not specify algorithm, burst or window when unlimited", errKey)
	case !yr.Unlimited && yr.Window == "" && !validUnit:
		return nil, configError(d.File, "invalid rate limit unit '%s'", jsonobj.Clip(yr.Unit))
	case yr.Window != "" && yr.Unit != "":
		return nil, configError(d.File, "%s: rate_limit sets both unit '%s' and window '%s': set one", errKey, jsonobj.Clip(yr.Unit), jsonobj.Clip(yr.Window))
	case !utf8.ValidString(yr.Name): // a !!binary name: every response would fail to encode
		return nil, configError(d.File, "%s: rate_limit name %s is not UTF-8, as each response's current_limit that names it must be", errKey, jsonobj.Quote(yr.Name))
	}
	for _, rep := range yr.Replaces {
		if rep.Name == "" {
			return nil, configError(d.File, "should not have an empty replaces entry")
		}
		if rep.Name == yr.Name {
			return nil, configError(d.File, "replaces should not contain name of same descriptor")
		}
		r.Replaces = append(r.Replaces, rep.Name)
	}
	if yr.Unlimited {
		return r, nil
	}
	window := UnitDuration(pb.RateLimitResponse_RateLimit_Unit(v))
	if yr.Window != "" {
		w, err := time.ParseDuration(yr.Window)
		if durations.Overflows(yr.Window) && yr.Window[0] != '-' { // a negative one is not positive: below
			return nil, configError(d.File, "%s: rate_limit window '%s' is longer than a Go duration holds, %s (about 292 years)", errKey, jsonobj.Clip(yr.Window), durations.Longest)
		}
		if err != nil || w <= 0 {
			return nil, configError(d.File, "%s: rate_limit window '%s' is not a positive Go duration such as 90s or 1h30m", errKey, jsonobj.Clip(yr.Window))
		}
		window = w
		r.Unit, r.UnitMultiplier = unitOf(w)
	} else {
		r.Unit = pb.RateLimitResponse_RateLimit_Unit(v)
	}
	alg := hotlimit.FixedWindow
	if yr.Algorithm != "" {
		if err := alg.UnmarshalText([]byte(yr.Algorithm)); err != nil {
			return nil, configError(d.File, "%s: rate_limit algorithm: %v", errKey, err)
		}
	}
	if alg == hotlimit.Unlimited {
		return nil, configError(d.File, "%s: rate_limit algorithm Unlimited: write unlimited: true instead", errKey)
	}
	if yr.Burst < 0 {
		return nil, configError(d.File, "%s: rate_limit burst %d must not be negative", errKey, yr.Burst)
	}
	if yr.Burst > 0 && !alg.HasBurst() {
		return nil, configError(d.File, "%s: rate_limit burst %d: %v has no burst, only TokenBucket and GCRA do", errKey, yr.Burst, alg)
	}
	if yr.RequestsPerUnit == 0 {
		// Denies every hit, as the reference does; the window still
		// gives its responses' duration_until_reset.
		r.Limit = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Window: window}
		return r, nil
	}
	limit, ok := toInt(uint64(yr.RequestsPerUnit))
	if !ok {
		return nil, configError(d.File, "%s: rate_limit requests_per_unit %d exceeds this platform's int (at most %d)", errKey, yr.RequestsPerUnit, math.MaxInt)
	}
	r.Limit = hotlimit.Config{Algorithm: alg, Limit: limit, Window: window, Burst: yr.Burst}
	// Only the fields here: how large a limit and window can be depends on
	// where the state lives (in memory, or up to 2^52 on Redis), so the
	// server checks the ranges when it builds the rule's limiter.
	if err := r.Limit.ValidateFields(); err != nil {
		return nil, configError(d.File, "%s: %v", errKey, err)
	}
	return r, nil
}

// Entry is one key/value pair of a request's descriptor.
type Entry struct{ Key, Value string }

// Match returns the rule that a descriptor of entries gets in domain, and
// whether the domain is known (none of a nil *Config). At each level an entry's key_value wins, then
// the first wildcard pattern of the level that matches key_value (file
// order), then the bare key; a rule applies only when it is found at the
// descriptor's last entry.
func (c *Config) Match(domain string, entries []Entry) (*Rule, bool) {
	if c == nil {
		return nil, false
	}
	d := c.domains[domain]
	if d == nil {
		return nil, false
	}
	r, _ := d.match(entries)
	return r, true
}

// match returns the rule of a descriptor of entries in d (see Config.Match)
// and, when an entry matched a wildcard with share_threshold, the wildcard
// value of each such entry by index (nil when none did).
func (d *Domain) match(entries []Entry) (*Rule, []string) {
	n := &d.root
	var r *Rule
	var shared []string
	for i, e := range entries {
		next, bare := n.lookup(e.Key, e.Value)
		if next == nil {
			return nil, nil
		}
		// A node with share_threshold is a wildcard's: reached through the
		// wildcard, or by a value that is the wildcard itself, which the
		// reference counts under the same name, the wildcard's. Reached by
		// the bare key (an entry whose key is the node's "a*b", its value
		// not ending in b), each value counts apart, as in the reference,
		// which shares only what the wildcard matched.
		if next.shared != "" && !bare {
			if shared == nil {
				shared = make([]string, len(entries))
			}
			shared[i] = sharedValue(next.shared, e.Key)
		}
		if i == len(entries)-1 {
			r = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		n = next
	}
	if r == nil {
		return nil, nil
	}
	return r, shared
}

// sharedValue is the value under which an entry of key counts when it
// selects the share_threshold descriptor whose key_value is final: final
// less the prefix key + "_", as the reference names it. That is the
// wildcard value ("/api/*") when the descriptor's key is the entry's, and
// all of final when the key itself is a wildcard ("k*", "k*_v*") that the
// entry's matched, whose values then share a counter per key.
func sharedValue(final, key string) string {
	if len(final) > len(key) && final[len(key)] == '_' && final[:len(key)] == key {
		return final[len(key)+1:]
	}
	return final
}

// lookup finds the child of n that key=value selects: key_value, else a
// wildcard, else the bare key, which bare reports.
func (n *node) lookup(key, value string) (c *node, bare bool) {
	if n.children == nil {
		return nil, false
	}
	var buf [128]byte
	kv := append(append(append(buf[:0], key...), '_'), value...)
	if c := n.children[string(kv)]; c != nil { // the conversion does not allocate
		return c, false
	}
	if len(n.wildcards) > 0 {
		s := string(kv)
		for _, w := range n.wildcards {
			if wildcardMatch(w.parts, s) {
				return n.children[w.key], false
			}
		}
	}
	return n.children[key], true
}

// wildcardMatch reports whether s matches the pattern split on '*' into
// parts, at least two (a wildcard holds a '*'): each '*' matches any run of
// bytes, possibly empty.
func wildcardMatch(parts []string, s string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	mid := s[len(first) : len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(mid, p)
		if i < 0 {
			return false
		}
		mid = mid[i+len(p):]
	}
	return true
}
