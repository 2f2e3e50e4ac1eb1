package readmecheck_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

const md = "# t\n\ntext\n\n```go\nd := time.Duration(n) * time.Second\n```\n\n" +
	"```go\nx := time.Parse(s)\n```\n\n" +
	"```go\nimport \"example.com/elsewhere\"\n\nelsewhere.Do()\n```\n\n" +
	"```go\nif err != nil { ... }\n```\n\n" +
	"```go\ntype Stringer interface {\n\tString() int\n}\n```\n"

func TestExtractFindsEveryGoBlockWithItsLine(t *testing.T) {
	s := readmecheck.Extract(md)
	require.Len(t, s, 5)
	assert.Equal(t, 6, s[0].Line)
	assert.Equal(t, "d := time.Duration(n) * time.Second", s[0].Code)
	assert.Equal(t, 10, s[1].Line)
}

func TestExtractLangFindsOnlyThatLanguagesBlocks(t *testing.T) {
	s := readmecheck.ExtractLang("```json\n{\"a\": 1}\n```\n\n```go\nx := 1\n```\n\n```jsonc\n{}\n```\n", "json")
	require.Len(t, s, 1, "neither the go block nor the jsonc one")
	assert.Equal(t, 2, s[0].Line)
	assert.Equal(t, `{"a": 1}`, s[0].Code)
}

func TestCheckReportsTypeErrorsAtTheREADMELine(t *testing.T) {
	results := readmecheck.Check(md, readmecheck.Config{
		Packages: map[string]string{"time": "time", "fmt": "fmt"},
		Free:     map[string]string{"n": "int", "s": "string", "err": "error"},
		Decls:    "fmt",
	})
	require.Len(t, results, 5)
	assert.NoError(t, results[0].Err, "free variables become parameters")
	require.Error(t, results[1].Err, "time.Parse takes two arguments and returns two values")
	assert.Contains(t, results[1].Err.Error(), "README.md:10")
	assert.Equal(t, "imports example.com/elsewhere", results[2].Skipped)
	assert.NoError(t, results[3].Err, "{ ... } is an empty block")
	require.Error(t, results[4].Err, "fmt.Stringer's String returns a string")
	assert.Contains(t, results[4].Err.Error(), "type Stringer")
}

func TestProse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte("# x\nintro\n## One\nthe  first\nsection\n### deeper\nstill one\n## Two\nsecond\n"), 0o644))
	assert.Equal(t, "# x intro ## One the first section ### deeper still one ## Two second", readmecheck.Prose(t, path, ""))
	assert.Equal(t, "## One the first section ### deeper still one", readmecheck.Prose(t, path, "One"))
	assert.Equal(t, "## Two second", readmecheck.Prose(t, path, "Two"))

	ft := &fakeTB{TB: t}
	func() { defer func() { recover() }(); readmecheck.Prose(ft, path, "Three") }()
	assert.True(t, ft.failed, "no section Three")
}

func TestCheckClaims(t *testing.T) {
	const text = "a limit of 5 here, a limit of 5 there, and 7 days"
	for _, tc := range []struct {
		claims []readmecheck.Claim
		fails  bool
	}{
		{[]readmecheck.Claim{{`a limit of (\d+)`, "5"}, {`(\d+) days`, "7"}}, false},
		{[]readmecheck.Claim{{`a limit of (\d+)`, "6"}}, true},
		{[]readmecheck.Claim{{`(\d+) weeks`, "7"}}, true},
		{[]readmecheck.Claim{{`a limit of (\d+) t`, "5"}, {`(\d+),`, "4"}}, true},
	} {
		ft := &fakeTB{TB: t}
		readmecheck.CheckClaims(ft, text, tc.claims...)
		assert.Equal(t, tc.fails, ft.failed, "%v", tc.claims)
	}
}

// fakeTB records a failure instead of failing the test; Fatalf panics, as
// FailNow's runtime.Goexit would end the goroutine.
type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Errorf(string, ...any)          { f.failed = true }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = true; panic("fatal") }
