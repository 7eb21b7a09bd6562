package test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// seedWord is a seed named by number ("seed" and three digits, one or
// several).
var seedWord = regexp.MustCompile(`(?i)\bseeds? \d{3}\b`)

// seedsDefinition is where the seeds are defined, once.
const seedsDefinition = "reference/README.md#the-specifications-seeds"

// A reader meets no undefined "seed NNN": -help names the originals
// instead, and every user doc (README, docs/*.md) that says "seed NNN"
// links to the one place that defines the seeds.
func TestSeedsAreDefinedWhereUsed(t *testing.T) {
	out, code := runBinary(t, flowgateBinary(t), "", "-help")
	require.Zero(t, code, out)
	require.Empty(t, seedWord.FindAllString(out, -1), "-help says seed NNN without defining it")

	def, err := os.ReadFile("../docs/reference/README.md")
	require.NoError(t, err)
	require.Contains(t, string(def), "\n## The specifications (\"seeds\")\n", "the seeds' definition")
	docs, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	for _, p := range append(docs, "../README.md") {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		text := string(raw)
		if !seedWord.MatchString(text) {
			continue
		}
		want := seedsDefinition
		if filepath.Base(p) == "README.md" {
			want = "docs/" + seedsDefinition
		}
		require.True(t, strings.Contains(text, "]("+want+")"),
			"%s says %q but never links the seeds' definition (%s)", p, seedWord.FindString(text), want)
	}
}

// Go comments cite the repo doc that states a contract (docs/*.md,
// docs/reference/*), never a seed by number: the seeds are not in the
// repository, and a reader of the code cannot follow a number.
func TestGoCommentsCiteRepoDocs(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if w := seedWord.FindString(cg.Text()); w != "" {
				t.Errorf("%s: a comment cites %q: cite the repo doc that states the contract", path, w)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
