package readmecheck

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// GoDoc returns the doc comments of the package in dir, as go doc -all
// shows them (the package's, then those of its constants, variables,
// functions, types and their methods, fields and values), as prose for
// CheckClaims: every run of white space one space. Test files are left
// out. It fails tb when the files cannot be read or parsed.
func GoDoc(tb testing.TB, dir string) string {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		tb.Fatalf("readmecheck: %v", err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			tb.Fatalf("readmecheck: %v", err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "", doc.PreserveAST)
	if err != nil {
		tb.Fatalf("readmecheck: %s: %v", dir, err)
	}
	var b strings.Builder
	add := func(s string) { b.WriteString(s); b.WriteString(" ") }
	fields := func(decl ast.Node) {
		ast.Inspect(decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				add(n.Doc.Text())
			case *ast.ValueSpec:
				add(n.Doc.Text())
			}
			return true
		})
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			add(v.Doc)
			fields(v.Decl)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			add(f.Doc)
		}
	}
	add(p.Doc)
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs)
	for _, t := range p.Types {
		add(t.Doc)
		fields(t.Decl)
		values(t.Consts)
		values(t.Vars)
		funcs(t.Funcs)
		funcs(t.Methods)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
