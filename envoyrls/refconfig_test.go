package envoyrls

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refConfigCase is a configuration directory: its files by name.
type refConfigCase struct {
	name  string
	files map[string]string
}

// one is a case of one file, d.yaml.
func one(name, yaml string) refConfigCase {
	return refConfigCase{name: name, files: map[string]string{"d.yaml": yaml}}
}

// ruleOf is a file of domain d whose one descriptor, key k, holds body (its
// lines indented under the descriptor).
func ruleOf(body string) string {
	return "domain: d\ndescriptors:\n  - key: k\n" + body
}

// refConfigCases are configurations the reference loads or rejects, each
// loaded by both servers: the reference's YAML format at every level, its
// load errors and its YAML decoder's edges.
var refConfigCases = []refConfigCase{
	one("minimal", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("no descriptors", "domain: d\n"),
	one("empty descriptors", "domain: d\ndescriptors: []\n"),
	one("null descriptors", "domain: d\ndescriptors: ~\n"),
	one("empty file", ""),
	one("only comments", "# a comment\n# another\n"),
	one("only a document marker", "---\n"),
	one("two documents", "domain: d\n---\ndomain: e\n"),
	one("top-level list", "- domain: d\n"),
	one("top-level scalar", "hello\n"),
	one("malformed", "domain: [\n"),
	one("tab indentation", "domain: d\ndescriptors:\n\t- key: k\n"),
	one("empty domain", "domain: \"\"\n"),
	one("null domain", "domain: ~\n"),
	one("integer domain", "domain: 5\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"),
	one("boolean domain", "domain: yes\n"),
	one("list domain", "domain: [a]\n"),
	one("map domain", "domain: {a: b}\n"),
	one("unknown top key", "domain: d\nfoo: 1\n"),
	one("unknown descriptor key", ruleOf("    foo: 1\n")),
	one("unknown rate_limit key", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, per: 2}\n")),
	one("unknown replaces key", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: a, other: b}]}\n")),
	one("unknown key deep", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        descriptors:\n          - key: c\n            bogus: 1\n"),
	one("unknown key under metadata", ruleOf("    metadata: {anything: {bogus: 1}}\n")),
	one("upper-case key", "Domain: d\n"),
	one("integer key", "domain: d\n1: a\n"),
	one("null key", "domain: d\n~: a\n"),
	one("reference key at another level", "domain: d\nunit: second\ndescriptors:\n  - key: k\n    requests_per_unit: 1\n    name: x\n"),
	one("domain key in a descriptor", ruleOf("    domain: e\n")),
	one("key in rate_limit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, key: x}\n")),
	one("extension keys at the top", "domain: d\nalgorithm: GCRA\n"),
	one("window in a descriptor", ruleOf("    window: 1s\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("burst in a descriptor", ruleOf("    burst: 3\n")),
	one("empty key", "domain: d\ndescriptors:\n  - value: v\n"),
	one("null key value", "domain: d\ndescriptors:\n  - key: ~\n"),
	one("integer key value", "domain: d\ndescriptors:\n  - key: 7\n    rate_limit: {unit: second, requests_per_unit: 1}\n"),
	one("duplicate key", "domain: d\ndescriptors:\n  - key: k\n  - key: k\n"),
	one("duplicate key value", "domain: d\ndescriptors:\n  - {key: k, value: v}\n  - {key: k, value: v}\n"),
	one("same key other values", "domain: d\ndescriptors:\n  - {key: k, value: v}\n  - {key: k, value: w}\n  - {key: k}\n"),
	one("duplicate nested", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - {key: k, value: v}\n      - {key: k, value: v}\n"),
	one("same key at two levels", "domain: d\ndescriptors:\n  - key: k\n    descriptors:\n      - key: k\n        rate_limit: {unit: second, requests_per_unit: 1}\n"),
	one("key_value collides with key", "domain: d\ndescriptors:\n  - {key: a, value: b}\n  - {key: a_b}\n"),
	one("duplicate mapping key", "domain: d\ndomain: e\n"),
	one("duplicate rate_limit key", ruleOf("    rate_limit: {unit: second, unit: minute, requests_per_unit: 1}\n")),
	one("rate_limit given twice", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1}\n    rate_limit: {name: n}\n")),
	one("rate_limit merged after", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1}\n    <<: {rate_limit: {name: n}}\n")),
	one("unit merged after unlimited", ruleOf("    rate_limit: {unlimited: true, <<: {unit: second}}\n")),
	one("unlimited merged before unit", ruleOf("    rate_limit: {<<: {unlimited: true}, unit: second}\n")),
	one("empty value", "domain: d\ndescriptors:\n  - {key: k, value: \"\"}\n  - {key: k}\n"),
	one("wildcard values", "domain: d\ndescriptors:\n  - {key: k, value: \"*\"}\n  - {key: k, value: \"a*\"}\n  - {key: k, value: \"a*b*c\"}\n  - {key: k, value: \"**\"}\n"),
	one("star in key", "domain: d\ndescriptors:\n  - key: \"k*\"\n    rate_limit: {unit: second, requests_per_unit: 1}\n"),
	one("unicode", "domain: dé\ndescriptors:\n  - {key: ключ, value: 値, rate_limit: {unit: second, requests_per_unit: 1}}\n"),
	one("null rate_limit", ruleOf("    rate_limit:\n")),
	one("empty rate_limit", ruleOf("    rate_limit: {}\n")),
	one("rate_limit list", ruleOf("    rate_limit: [{unit: second}]\n")),
	one("rate_limit scalar", ruleOf("    rate_limit: 5\n")),
	one("no unit", ruleOf("    rate_limit: {requests_per_unit: 1}\n")),
	one("no requests_per_unit", ruleOf("    rate_limit: {unit: second}\n")),
	one("zero requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0}\n")),
	one("max requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 4294967295}\n")),
	one("requests_per_unit past uint32", ruleOf("    rate_limit: {unit: second, requests_per_unit: 4294967296}\n")),
	one("negative requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: -1}\n")),
	one("string requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: \"5\"}\n")),
	one("word requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: five}\n")),
	one("null requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: ~}\n")),
	one("float requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 5.0}\n")),
	one("hex requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0x10}\n")),
	one("hex requests_per_unit past uint32", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0x100000000}\n")),
	one("hex requests_per_unit past int64", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0x8000000000000000}\n")),
	one("hex requests_per_unit of uint64's most", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0xffffffffffffffff}\n")),
	one("hex requests_per_unit past uint64", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0x1ffffffffffffffff}\n")),
	one("requests_per_unit past int64", ruleOf("    rate_limit: {unit: second, requests_per_unit: 9223372036854775808}\n")),
	one("requests_per_unit past uint64", ruleOf("    rate_limit: {unit: second, requests_per_unit: 18446744073709551616}\n")),
	one("octal requests_per_unit past uint64", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0o7777777777777777777777}\n")),
	one("binary requests_per_unit past uint32", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0b100000000000000000000000000000000}\n")),
	one("hex value past uint64", ruleOf("    value: 0x1ffffffffffffffff\n")),
	one("merged hex requests_per_unit past uint64 replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: 0x1ffffffffffffffff}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged quoted requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: \"5\"}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged requests_per_unit past uint32 replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: 4294967296}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged negative requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: -1}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged boolean requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: true}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged yes requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: yes}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged word requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: five}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged signed hex requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: +0x10}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged hex requests_per_unit past uint32 replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: 0x100000000}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged sexagesimal requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: 1:30}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged word into a boolean, replaced", ruleOf("    rate_limit:\n      <<: {unlimited: abc}\n      unlimited: true\n")),
	one("merged integer into a boolean, replaced", ruleOf("    rate_limit:\n      <<: {unlimited: 1}\n      unlimited: true\n")),
	one("merged yes into a boolean, replaced", ruleOf("    rate_limit:\n      <<: {unlimited: yes}\n      unlimited: true\n")),
	one("float requests_per_unit past uint32", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1e10}\n")),
	one("negative fraction requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: -0.5}\n")),
	one("merged negative fraction requests_per_unit replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: -0.5}\n      requests_per_unit: 2\n      unit: second\n")),
	one("hex requests_per_unit past uint64 given again", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0x1ffffffffffffffff, requests_per_unit: 2}\n")),
	one("octal requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 010}\n")),
	one("0o octal requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0o10}\n")),
	one("binary requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 0b11}\n")),
	one("underscored requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1_000}\n")),
	one("sexagesimal requests_per_unit", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1:30}\n")),
	one("sexagesimal requests_per_unit, block", ruleOf("    rate_limit:\n      unit: second\n      requests_per_unit: 1:30\n")),
	one("quoted requests_per_unit, block", ruleOf("    rate_limit:\n      unit: second\n      requests_per_unit: \"12\"\n")),
	one("unit upper case", ruleOf("    rate_limit: {unit: SECOND, requests_per_unit: 1}\n")),
	one("unit mixed case", ruleOf("    rate_limit: {unit: Minute, requests_per_unit: 1}\n")),
	one("every unit", "domain: d\ndescriptors:\n"+
		"  - {key: s, rate_limit: {unit: second, requests_per_unit: 1}}\n"+
		"  - {key: m, rate_limit: {unit: minute, requests_per_unit: 1}}\n"+
		"  - {key: h, rate_limit: {unit: hour, requests_per_unit: 1}}\n"+
		"  - {key: d, rate_limit: {unit: day, requests_per_unit: 1}}\n"+
		"  - {key: w, rate_limit: {unit: week, requests_per_unit: 1}}\n"+
		"  - {key: mo, rate_limit: {unit: month, requests_per_unit: 1}}\n"+
		"  - {key: y, rate_limit: {unit: year, requests_per_unit: 1}}\n"),
	one("unit unknown", ruleOf("    rate_limit: {unit: unknown, requests_per_unit: 1}\n")),
	one("unit plural", ruleOf("    rate_limit: {unit: seconds, requests_per_unit: 1}\n")),
	one("unit padded", ruleOf("    rate_limit: {unit: \" second\", requests_per_unit: 1}\n")),
	one("unit number", ruleOf("    rate_limit: {unit: 1, requests_per_unit: 1}\n")),
	one("unit enum number", ruleOf("    rate_limit: {unit: \"1\", requests_per_unit: 1}\n")),
	one("unlimited", ruleOf("    rate_limit: {unlimited: true}\n")),
	one("unlimited with unit", ruleOf("    rate_limit: {unlimited: true, unit: second}\n")),
	one("unlimited with unknown unit", ruleOf("    rate_limit: {unlimited: true, unit: unknown}\n")),
	one("unlimited with bad unit", ruleOf("    rate_limit: {unlimited: true, unit: fortnight}\n")),
	one("unlimited with requests_per_unit", ruleOf("    rate_limit: {unlimited: true, requests_per_unit: 5}\n")),
	one("unlimited false without unit", ruleOf("    rate_limit: {unlimited: false}\n")),
	one("unlimited yes", ruleOf("    rate_limit: {unlimited: yes}\n")),
	one("unlimited quoted true", ruleOf("    rate_limit: {unlimited: \"true\"}\n")),
	one("unlimited 1", ruleOf("    rate_limit: {unlimited: 1}\n")),
	one("unlimited y", ruleOf("    rate_limit: {unlimited: y}\n")),
	one("shadow_mode True", ruleOf("    shadow_mode: True\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("shadow_mode string", ruleOf("    shadow_mode: sure\n")),
	one("detailed_metric", ruleOf("    detailed_metric: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("value_to_metric", ruleOf("    value_to_metric: true\n")),
	one("quota_mode", ruleOf("    quota_mode: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("share_threshold on a wildcard", "domain: d\ndescriptors:\n  - {key: k, value: \"a*\", share_threshold: true}\n"),
	one("share_threshold on a star key", "domain: d\ndescriptors:\n  - {key: \"k*\", share_threshold: true}\n"),
	one("share_threshold without wildcard", ruleOf("    share_threshold: true\n")),
	one("share_threshold false without wildcard", ruleOf("    share_threshold: false\n")),
	one("name and replaces", "domain: d\ndescriptors:\n  - {key: a, rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: b}, {name: c}]}}\n  - {key: b, rate_limit: {name: b, unit: second, requests_per_unit: 1}}\n"),
	one("replaces an unknown name", ruleOf("    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: nobody}]}\n")),
	one("replaces itself", ruleOf("    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: a}]}\n")),
	one("replaces empty", ruleOf("    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: \"\"}]}\n")),
	one("replaces without a name", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: b}]}\n")),
	one("replaces empty without a name", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{}]}\n")),
	one("replaces of scalars", ruleOf("    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [b]}\n")),
	one("replaces a map", ruleOf("    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: {name: b}}\n")),
	one("replaces null", ruleOf("    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: ~}\n")),
	one("replaces on unlimited", ruleOf("    rate_limit: {name: a, unlimited: true, replaces: [{name: b}]}\n")),
	one("replaces itself unlimited", ruleOf("    rate_limit: {name: a, unlimited: true, replaces: [{name: a}]}\n")),
	one("replaces itself with a bad unit", ruleOf("    rate_limit: {name: a, unit: fortnight, replaces: [{name: a}]}\n")),
	one("two names equal", "domain: d\ndescriptors:\n  - {key: a, rate_limit: {name: n, unit: second, requests_per_unit: 1}}\n  - {key: b, rate_limit: {name: n, unit: second, requests_per_unit: 1}}\n"),
	one("metadata", ruleOf("    metadata: {a: 1, b: [x, 2.5, {c: d}], e: ~, f: true}\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("metadata list", ruleOf("    metadata: [1, 2]\n")),
	one("metadata scalar", ruleOf("    metadata: x\n")),
	one("metadata integer keys", ruleOf("    metadata: {1: a, b: {2: c}}\n")),
	one("metadata timestamp", ruleOf("    metadata: {when: 2001-12-14}\n")),
	one("metadata binary", ruleOf("    metadata: {b: !!binary aGVsbG8=}\n")),
	one("metadata big integer", ruleOf("    metadata: {n: 18446744073709551615}\n")),
	one("descriptors a map", "domain: d\ndescriptors: {key: k}\n"),
	one("descriptors a scalar", "domain: d\ndescriptors: k\n"),
	one("descriptors of scalars", "domain: d\ndescriptors: [k]\n"),
	one("descriptors of lists", "domain: d\ndescriptors: [[k]]\n"),
	one("descriptors of nulls", "domain: d\ndescriptors: [~]\n"),
	one("value a list", ruleOf("    value: [a]\n")),
	one("value a map", ruleOf("    value: {a: b}\n")),
	one("value integer", ruleOf("    value: 5\n")),
	one("value boolean", ruleOf("    value: yes\n")),
	one("value float", ruleOf("    value: 1.5\n")),
	one("value timestamp", ruleOf("    value: 2001-12-14\n")),
	one("value datetime", ruleOf("    value: 2001-12-14t21:59:43.10-05:00\n")),
	one("value past int64", ruleOf("    value: 9223372036854775808\n")),
	one("value binary", ruleOf("    value: !!binary aGVsbG8=\n")),
	one("value null", ruleOf("    value: ~\n")),
	one("value with tag str", ruleOf("    value: !!str 5\n")),
	one("value merge key", "domain: d\nx: &a {key: k}\n"),
	one("anchors", "domain: d\ndescriptors:\n  - &r {key: a, rate_limit: {unit: second, requests_per_unit: 1}}\n  - key: b\n    rate_limit: *rl\n"),
	one("anchors defined", "domain: d\ndescriptors:\n  - {key: a, rate_limit: &rl {unit: second, requests_per_unit: 1}}\n  - {key: b, rate_limit: *rl}\n"),
	one("merge key", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: &rl {unit: second, requests_per_unit: 1}\n  - key: b\n    rate_limit:\n      <<: *rl\n      requests_per_unit: 2\n"),
	one("nested deep", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        descriptors:\n          - key: c\n            descriptors:\n              - key: e\n                rate_limit: {unit: second, requests_per_unit: 1}\n"),
	one("rule on inner and leaf", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n    descriptors:\n      - key: b\n        rate_limit: {unit: minute, requests_per_unit: 1}\n"),
	one("merged float replaced", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {requests_per_unit: 1.5}\n  - key: b\n    rate_limit:\n      <<: *m\n      requests_per_unit: 2\n      unit: second\n"),
	one("float replaced by a merge", ruleOf("    rate_limit:\n      requests_per_unit: 1.5\n      <<: {requests_per_unit: 2}\n      unit: second\n")),
	one("merged float counts", ruleOf("    rate_limit:\n      unit: second\n      <<: {requests_per_unit: 1.5}\n")),
	one("merged float into a boolean, replaced", ruleOf("    rate_limit:\n      <<: {unlimited: 1.5}\n      unlimited: true\n")),
	one("merged quoted yes replaced", ruleOf("    rate_limit:\n      <<: {unlimited: 'yes'}\n      unlimited: true\n")),
	one("merged huge integer replaced", ruleOf("    rate_limit:\n      <<: {requests_per_unit: 99999999999999999999}\n      requests_per_unit: 2\n      unit: second\n")),
	one("merged list of scalars replaced", "domain: d\ndescriptors:\n  - key: b\n    <<: {descriptors: [1]}\n    descriptors: [{key: c}]\n"),
	one("unknown key in a replaced list", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [{key: c, foo: 1}]\n    descriptors: [{key: e}]\n"),
	one("key not a string in a replaced list", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [{key: c, 5: x}]\n    descriptors: [{key: e}]\n"),
	one("unknown key beside a bad value, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [{key: c, foo: 1, rate_limit: {unit: second, requests_per_unit: abc}}]\n    descriptors: [{key: e}]\n"),
	one("descriptors a scalar, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: 5\n    descriptors: [{key: e}]\n"),
	one("rate_limit a scalar, replaced", ruleOf("    rate_limit: 5\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("replaces a mapping, replaced", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, replaces: {name: a}, replaces: [{name: a}]}\n")),
	one("metadata a list, replaced", ruleOf("    metadata: [a]\n    metadata: {}\n    rate_limit: {unit: second, requests_per_unit: 1}\n")),
	one("an alias of a bad value used twice, replaced once", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {unit: second, requests_per_unit: abc}\n  - key: b\n    rate_limit: {<<: *m, requests_per_unit: 2}\n  - key: c\n    rate_limit: *m\n"),
	one("a null item of descriptors, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [~]\n    descriptors: [{key: e}]\n"),
	one("an alias of a null in replaces, replaced", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1, replaces: &n ~}\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [*n]}\n")+"descriptors: []\n"),
	one("a null item of descriptors that counts", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [~]\n"),
	one("merge of an alias of a list", "domain: d\ndescriptors:\n  - key: k\n    descriptors: &l [{key: x}]\n    <<: *l\n"),
	one("merge of an alias of an empty list", "domain: d\ndescriptors:\n  - key: k\n    descriptors: &l []\n    <<: *l\n"),
	one("merge of a list holding an alias of a scalar", "domain: d\ndescriptors:\n  - key: k\n    value: &s v\n    <<: [*s]\n"),
	one("bad merge in metadata", "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: &l [], b: {<<: *l}}\n"),
	one("bad merge in a replaced value", "domain: d\ndescriptors:\n  - key: k\n    descriptors: &l []\n    rate_limit: {<<: *l}\n    rate_limit: {unit: second, requests_per_unit: 1}\n"),
	one("a float in nested merges, replaced", ruleOf("    rate_limit:\n      <<: {<<: {requests_per_unit: 1.5}}\n      requests_per_unit: 2\n      unit: second\n")),
	one("list as a key in metadata", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata:\n      a0: &a0 {? [x] : 1, ? [y] : 2}\n      a1: &a1 {<<: [*a0, *a0]}\n")),
	one("mapping as a key in metadata", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata: {? {a: b} : 1}\n")),
	one("float in metadata", ruleOf("    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata: {x: 1.5}\n")),
	one("merge of a list holding a scalar", ruleOf("    <<: [{value: j}, 3]\n")),
	one("merge of a null", ruleOf("    <<: ~\n")),
	one("a descriptor merging itself", "domain: d\ndescriptors:\n  - &x {key: k, <<: [*x, *x]}\n"),
	one("a rate_limit merging itself", ruleOf("    rate_limit: &r {unit: second, requests_per_unit: 1, <<: *r}\n")),
	one("crlf", "domain: d\r\ndescriptors:\r\n  - key: k\r\n    rate_limit: {unit: second, requests_per_unit: 1}\r\n"),
	one("bom", "\ufeffdomain: d\n"),
	one("json", `{"domain": "d", "descriptors": [{"key": "k", "rate_limit": {"unit": "second", "requests_per_unit": 1}}]}`),
	{name: "two domains", files: map[string]string{"a.yaml": "domain: a\n", "b.yaml": "domain: b\n"}},
	{name: "duplicate domain", files: map[string]string{"a.yaml": "domain: a\n", "b.yaml": "domain: a\n"}},
	{name: "one bad file of two", files: map[string]string{"a.yaml": "domain: a\n", "b.yaml": "domain: b\nfoo: 1\n"}},
	{name: "an empty file beside a good one", files: map[string]string{"a.yaml": "domain: a\n", "b.yaml": ""}},
	{name: "yml", files: map[string]string{"a.yml": "domain: a\n"}},
	{name: "upper-case extension", files: map[string]string{"a.YAML": "domain: a\n"}},
	{name: "no file", files: map[string]string{}},
	{name: "a file of another extension", files: map[string]string{"a.yaml": "domain: a\n", "notes.txt": "not a configuration\n"}},
	{name: "a hidden file", files: map[string]string{"a.yaml": "domain: a\n", ".b.yaml": "domain: a\n"}},
	{name: "a subdirectory", files: map[string]string{"a.yaml": "domain: a\n", "sub/b.yaml": "domain: a\n"}},
}

// refDivergent names the cases where hotlimitd answers other than the
// reference on purpose, with the reason.
var refDivergent = map[string]string{
	"upper-case extension":        "only *.yaml and *.yml files are read (README: -config DIR)",
	"a file of another extension": "only *.yaml and *.yml files are read (README: -config DIR)",
	"a hidden file":               "hidden files are not read, as the reference's RUNTIME_IGNOREDOTFILES=true (README: Moving from the reference)",
	"a subdirectory":              "subdirectories are not read (README: -config DIR)",
}

// TestReferenceConfigLoad loads each of refConfigCases with the reference
// server (envoyproxy/ratelimit's binary, at HOTLIMITD_REFERENCE) and with
// LoadDir, and compares whether each accepts it and, for the reference's
// own errors (those not of its YAML decoder), the reason given.
//
//	HOTLIMITD_REFERENCE=/tmp/refbin go test -run TestReferenceConfigLoad -v .
func TestReferenceConfigLoad(t *testing.T) {
	bin := referenceBinary(t)
	for _, tc := range refConfigCases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "rt", "config")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for name, body := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
			}
			refOK, refMsg := referenceLoads(t, bin, root)
			_, err := LoadDir(dir)
			t.Logf("reference: ok=%v %s; hotlimitd: %v", refOK, refMsg, err)
			if why, ok := refDivergent[tc.name]; ok {
				t.Logf("documented difference: %s", why)
				return
			}
			if !assert.Equal(t, refOK, err == nil, "accepted by the reference (%s), by hotlimitd (%v)", refMsg, err) {
				return
			}
			if refOK {
				return
			}
			assert.ErrorIs(t, err, ErrConfig)
			// "config.d.yaml: reason": the reason, unless the YAML
			// decoders' (whose messages differ) gave it.
			_, reason, _ := strings.Cut(refMsg, ": ")
			if !strings.HasPrefix(reason, "error loading config file") {
				assert.Contains(t, err.Error(), reason)
			}
		})
	}
}

// referenceLoads starts the reference server on the configuration under
// root (root/rt/config) with a backend it does not reach at start, and
// returns whether it loaded the configuration, and else its error.
func referenceLoads(t *testing.T, bin, root string) (bool, string) {
	cmd := exec.Command(bin)
	cmd.SysProcAttr = childproc.Attr() // it dies with the test binary
	cmd.Env = append(os.Environ(),
		"BACKEND_TYPE=memcache", "MEMCACHE_HOST_PORT=127.0.0.1:1", "USE_STATSD=false", "LOG_LEVEL=info",
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=rt", "RUNTIME_APPDIRECTORY=config", "RUNTIME_WATCH_ROOT=false",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=0", "HOST=127.0.0.1", "PORT=0", "DEBUG_HOST=127.0.0.1", "DEBUG_PORT=0")
	out, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = cmd.Stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	type result struct {
		ok  bool
		msg string
	}
	done := make(chan result, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if strings.Contains(line, `msg="Successfully loaded new configuration"`) {
				done <- result{ok: true}
				return
			}
			if _, q, found := strings.Cut(line, `msg="Error loading new configuration: `); found {
				msg, err := strconv.Unquote(`"` + q)
				if err != nil {
					msg = q
				}
				done <- result{msg: msg}
				return
			}
		}
		done <- result{msg: "ended without loading:\n" + log.String()}
	}()
	select {
	case r := <-done:
		return r.ok, r.msg
	case <-time.After(20 * time.Second):
		t.Fatal("the reference server did not load its configuration in 20 s")
		return false, ""
	}
}
