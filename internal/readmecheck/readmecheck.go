// Package readmecheck type-checks the Go snippets of a README against the
// packages they use, so that the documentation cannot drift from the API.
//
// A README's ```go blocks are fragments: statements that use variables the
// text around them introduces (a user's key, a request's context) and leave
// out imports and error handling. Check wraps each one in a function of its
// own whose parameters are those free variables, imports the packages it
// names, and type-checks it against their export data, which the go command
// builds (go list -export: the build cache's, once built). A block that
// begins with a type
// declaration is checked at the top level instead, and must declare exactly
// the type of the same name in the package that [Config.Decls] names.
//
// What is checked is that every name resolves and every call and assignment
// is well typed; variables declared and not used, and imports not used, are
// allowed (a snippet shows a call, not what the caller does next). The
// elision "{ ... }" counts as an empty block.
package readmecheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Snippet is one ```go block of a README.
type Snippet struct {
	// Line is the README's line of the block's first line of code (1-based).
	Line int
	// Code is the block's text, without its fences.
	Code string
}

// Extract returns the ```go blocks of the Markdown text md, in order.
func Extract(md string) []Snippet {
	return ExtractLang(md, "go")
}

// ExtractLang returns the blocks of the Markdown text md fenced as ```lang
// (json, yaml), in order, so that a test can check the snippets in other
// languages against what reads them.
func ExtractLang(md, lang string) []Snippet {
	var out []Snippet
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```"+lang {
			continue
		}
		start := i + 1
		j := start
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		out = append(out, Snippet{Line: start + 1, Code: strings.Join(lines[start:j], "\n")})
		i = j
	}
	return out
}

// Config says what a README's snippets may use.
type Config struct {
	// Packages maps each package name a snippet may use (time, service,
	// redislimit) to its import path.
	Packages map[string]string
	// Free maps each variable the text introduces (apiKey, ctx) to its type,
	// written with the names of Packages, such as "context.Context". A
	// snippet that uses one without declaring it gets it as a parameter.
	Free map[string]string
	// Decls is the import path of the package whose types a block that
	// begins with "type" restates; one of Packages' paths.
	Decls string
	// Only, when set, limits the check to the snippets that import it, so
	// that a module checks the snippets about it and leaves the others to
	// their own modules.
	Only string
}

// Result is the outcome of checking one snippet.
type Result struct {
	Snippet
	// Skipped says why the snippet was not checked (it imports a package
	// that Config.Packages does not name), or is empty.
	Skipped string
	// Err lists the snippet's type errors, or is nil.
	Err error
}

var (
	importLine = regexp.MustCompile(`^\s*import\s+"([^"]+)"`)
	qualified  = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z_]`)
	elision    = regexp.MustCompile(`\{\s*\.\.\.\s*\}`)
	word       = regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]*\b`)
)

// Check type-checks every snippet of md under c, one Result per snippet.
func Check(md string, c Config) []Result {
	snippets := Extract(md)
	results := make([]Result, len(snippets))
	fset := token.NewFileSet()
	var paths []string
	for _, path := range c.Packages {
		paths = append(paths, path)
	}
	exports, err := exportData(paths)
	if err != nil {
		for i, s := range snippets {
			results[i] = Result{Snippet: s, Err: err}
		}
		return results
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("readmecheck: no export data for %s", path)
		}
		return os.Open(file)
	})
	known := map[string]bool{}
	for _, path := range c.Packages {
		known[path] = true
	}
	var declNames []string // the exported types of c.Decls, which a type block may use
	declPkg := ""
	if c.Decls != "" {
		p, err := imp.Import(c.Decls)
		if err != nil {
			for i, s := range snippets {
				results[i] = Result{Snippet: s, Err: fmt.Errorf("readmecheck: Config.Decls: %w", err)}
			}
			return results
		}
		declPkg = p.Name()
		for _, name := range p.Scope().Names() {
			tn, ok := p.Scope().Lookup(name).(*types.TypeName)
			if !ok || !token.IsExported(name) {
				continue
			}
			if named, ok := tn.Type().(*types.Named); ok && named.TypeParams().Len() == 0 {
				declNames = append(declNames, name)
			}
		}
	}
	for i, s := range snippets {
		results[i] = Result{Snippet: s}
		src, skipped := wrap(s, c, known, declPkg, declNames)
		if skipped != "" {
			results[i].Skipped = skipped
			continue
		}
		results[i].Err = typeCheck(fset, imp, s, src, c)
	}
	return results
}

// exportData compiles paths and their dependencies (from the build cache,
// when they are there) with the go command of the running toolchain, and
// returns each package's export data file by import path.
func exportData(paths []string) (map[string]string, error) {
	sort.Strings(paths)
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	out, err := exec.Command("go", args...).Output() // go test puts its GOROOT/bin first in PATH
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("readmecheck: go list -export: %w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("readmecheck: go list -export: %w", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return exports, nil
}

// wrap returns the snippet as a file of package readme, or why it cannot be
// checked under c.
func wrap(s Snippet, c Config, known map[string]bool, declPkg string, declNames []string) (src string, skipped string) {
	var body []string
	imports := map[string]bool{}
	if c.Only != "" && !strings.Contains(s.Code, `import "`+c.Only+`"`) {
		return "", fmt.Sprintf("does not import %s", c.Only)
	}
	for _, line := range strings.Split(s.Code, "\n") {
		if m := importLine.FindStringSubmatch(line); m != nil {
			if !known[m[1]] {
				return "", fmt.Sprintf("imports %s", m[1])
			}
			imports[m[1]] = true
			continue
		}
		body = append(body, line)
	}
	code := elision.ReplaceAllString(strings.Join(body, "\n"), "{}")
	topLevel := strings.HasPrefix(strings.TrimSpace(code), "type ")

	var params []string
	if !topLevel {
		names := map[string]bool{}
		for _, w := range word.FindAllStringIndex(code, -1) {
			if w[0] > 0 && code[w[0]-1] == '.' {
				continue // a selector, not a variable
			}
			names[code[w[0]:w[1]]] = true
		}
		var free []string
		for name := range names {
			if _, ok := c.Free[name]; ok && !declares(code, name) {
				free = append(free, name)
			}
		}
		sort.Strings(free)
		for _, name := range free {
			params = append(params, name+" "+c.Free[name])
		}
	}
	uses := code + "\n" + strings.Join(params, "\n")
	for _, m := range qualified.FindAllStringSubmatch(stripComments(uses), -1) {
		if path, ok := c.Packages[m[1]]; ok {
			imports[path] = true
		}
	}
	if topLevel && c.Decls != "" {
		imports[c.Decls] = true
	}

	var b strings.Builder
	b.WriteString("package readme\n\n")
	var paths []string
	for path := range imports {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		fmt.Fprintf(&b, "import %q\n", path)
	}
	if topLevel {
		// The package's other types, under their own names, as the
		// snippet writes them inside that package.
		for _, name := range declNames {
			if !regexp.MustCompile(`(?m)^type\s+` + name + `\b`).MatchString(code) {
				fmt.Fprintf(&b, "\ntype %s = %s.%s", name, declPkg, name)
			}
		}
		fmt.Fprintf(&b, "\n\n//line README.md:%d\n%s\n", s.Line, code)
		return b.String(), ""
	}
	fmt.Fprintf(&b, "\nfunc _(%s) {\n//line README.md:%d\n%s\n}\n", strings.Join(params, ", "), s.Line, code)
	return b.String(), ""
}

// declares reports whether code declares name with := or var.
func declares(code, name string) bool {
	q := regexp.QuoteMeta(name)
	re := regexp.MustCompile(`(?m)^\s*(?:(?:[A-Za-z_]\w*\s*,\s*)*` + q + `(?:\s*,\s*[A-Za-z_]\w*)*\s*:=|var\s+` + q + `\b)`)
	return re.MatchString(code)
}

// stripComments drops the // comments of src, so that the prose in them
// names no package.
func stripComments(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "//"); j >= 0 && !strings.Contains(l[:j], `"`) {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// typeCheck parses and checks src, the wrapped snippet s, and for a type
// declaration compares it with c.Decls's type of the same name.
func typeCheck(fset *token.FileSet, imp types.Importer, s Snippet, src string, c Config) error {
	f, err := parser.ParseFile(fset, "readme.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("parse: %w\n%s", err, src)
	}
	var errs []string
	conf := types.Config{
		Importer: imp,
		Error: func(err error) {
			if te, ok := err.(types.Error); ok && te.Soft {
				return // declared and not used, imported and not used
			}
			errs = append(errs, err.Error())
		},
	}
	pkg, _ := conf.Check("readme", fset, []*ast.File{f}, nil)
	if len(errs) == 0 && pkg != nil && c.Decls != "" {
		errs = append(errs, compareDecls(pkg, f, c.Decls)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s\n%s", strings.Join(errs, "\n"), src)
	}
	return nil
}

// compareDecls checks that every type f declares is the one of the same name
// in the package at path, which pkg imports.
func compareDecls(pkg *types.Package, f *ast.File, path string) []string {
	var target *types.Package
	for _, p := range pkg.Imports() {
		if p.Path() == path {
			target = p
		}
	}
	if target == nil {
		return nil
	}
	var errs []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, spec := range g.Specs {
			name := spec.(*ast.TypeSpec).Name.Name
			mine := pkg.Scope().Lookup(name)
			theirs := target.Scope().Lookup(name)
			if theirs == nil {
				errs = append(errs, fmt.Sprintf("type %s: %s declares no such type", name, path))
				continue
			}
			if !types.Identical(mine.Type().Underlying(), theirs.Type().Underlying()) {
				errs = append(errs, fmt.Sprintf("type %s is %s in the README, %s in %s",
					name, mine.Type().Underlying(), theirs.Type().Underlying(), path))
			}
		}
	}
	return errs
}

// Test checks the snippets of the README file at path under c in t: each
// snippet checked must type-check (an error fails t, naming the README's
// line), each skipped one is logged. It returns how many were checked, for
// the caller to compare with what the README holds.
func Test(t testing.TB, path string, c Config) (checked int) {
	t.Helper()
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}
	for _, r := range Check(string(md), c) {
		if r.Skipped != "" {
			t.Logf("%s:%d: skipped: %s", path, r.Line, r.Skipped)
			continue
		}
		checked++
		if r.Err != nil {
			t.Errorf("%s:%d: %v", path, r.Line, r.Err)
		}
	}
	return checked
}
