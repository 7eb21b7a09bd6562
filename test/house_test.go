package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/test/noderedtest"
)

// maxTestLines bounds a Test function, declaration to closing brace: a
// longer end-to-end test is split into named steps that run in order on
// one fixture (a struct built once: the started binaries, the clients), so
// that a failure names its step and each step reads on one screen.
const maxTestLines = 150

// Every Test function in the module's _test.go files (whatever their build
// tags: the chaos drills count too) fits in maxTestLines.
func TestHouseTestFunctionsStayShort(t *testing.T) {
	root := noderedtest.RepoRoot()
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "vendor", "third_party": // third_party: upstream code, kept as upstream
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			seen++
			from, to := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := to - from + 1; n > maxTestLines {
				name, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %s is %d lines (at most %d): split it into steps over one fixture",
					name, from, fn.Name.Name, n, maxTestLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 500 {
		t.Fatalf("found only %d Test functions under %s", seen, root)
	}
}

// maxFloatingLines bounds a comment outside function bodies attached to
// nothing: longer prose is an essay, and an essay belongs with what it
// explains (the package doc in doc.go, the doc comment of the declaration
// it describes, or the docs/*.md page on its subject, with a one-line
// pointer left at the declaration). A shorter note (a section heading
// between declarations) may float.
const maxFloatingLines = 4

// floatingSkipDirs are directories the essay check leaves out, relative to
// the repository root (none).
var floatingSkipDirs []string

// Every Go file of the module (tests and build-tagged files included,
// generated files left out) holds no comment of more than
// maxFloatingLines lines that documents nothing: each is the package doc,
// the doc or line comment of a declaration, spec or field, or lies inside
// a function body.
func TestHouseEssaysAreAttached(t *testing.T) {
	root := noderedtest.RepoRoot()
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "vendor", "third_party": // third_party: upstream code, kept as upstream
				return filepath.SkipDir
			}
			if slices.Contains(floatingSkipDirs, filepath.ToSlash(name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		seen++
		for _, cg := range floatingComments(f) {
			from, to := fset.Position(cg.Pos()).Line, fset.Position(cg.End()).Line
			if n := to - from + 1; n > maxFloatingLines {
				t.Errorf("%s:%d: a %d-line comment documents nothing: make it the doc comment of what it explains, "+
					"the package doc (doc.go), or move it to docs/*.md", name, from, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 500 {
		t.Fatalf("found only %d Go files under %s", seen, root)
	}
}

// floatingComments returns f's comment groups after the package clause
// that document nothing: neither the package, nor a declaration, spec or
// field (doc or line comment), and outside every function body.
func floatingComments(f *ast.File) []*ast.CommentGroup {
	attached := map[*ast.CommentGroup]bool{f.Doc: true}
	var bodies []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		switch d := n.(type) {
		case *ast.GenDecl:
			attached[d.Doc] = true
		case *ast.FuncDecl:
			attached[d.Doc] = true
			if d.Body != nil {
				bodies = append(bodies, d.Body)
			}
			return true
		case *ast.FuncLit:
			bodies = append(bodies, d.Body)
		case *ast.TypeSpec:
			attached[d.Doc], attached[d.Comment] = true, true
		case *ast.ValueSpec:
			attached[d.Doc], attached[d.Comment] = true, true
		case *ast.ImportSpec:
			attached[d.Doc], attached[d.Comment] = true, true
		case *ast.Field:
			attached[d.Doc], attached[d.Comment] = true, true
		}
		return true
	})
	var out []*ast.CommentGroup
	for _, cg := range f.Comments {
		if cg.Pos() < f.Package || attached[cg] {
			continue
		}
		inBody := slices.ContainsFunc(bodies, func(b ast.Node) bool {
			return b.Pos() <= cg.Pos() && cg.End() <= b.End()
		})
		if !inBody {
			out = append(out, cg)
		}
	}
	return out
}

// The essay check finds what floats, wherever it floats, and nothing else.
func TestHouseFloatingCommentsFound(t *testing.T) {
	const src = `// Package p is documented.
package p

// an essay between the imports' place and the first declaration

// T is documented.
type T struct {
	// A is documented.
	A int // and has a line comment

	// a note inside the struct, attached to no field
}

// a note between declarations

// F is documented.
func F() {
	// inside a function body: never counted
	_ = func() {
		// inside a literal's body: never counted
	}
}

var v = 1 // a line comment

// a note at the end of the file
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cg := range floatingComments(f) {
		got = append(got, strings.TrimSpace(cg.Text()))
	}
	want := []string{
		"an essay between the imports' place and the first declaration",
		"a note inside the struct, attached to no field",
		"a note between declarations",
		"a note at the end of the file",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("floating comments:\n got %q\nwant %q", got, want)
	}
}
