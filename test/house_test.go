package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
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
			case ".git", "node_modules", "testdata", "vendor":
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
