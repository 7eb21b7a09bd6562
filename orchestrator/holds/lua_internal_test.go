package holds

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// Every top-level local of the prelude is used by a script or by the
// prelude itself: luacheck sees them as read-only globals of the scripts
// (.luacheckrc), so it cannot tell.
func TestPreludeDefinesNothingUnused(t *testing.T) {
	comment := regexp.MustCompile(`--[^\n]*`)
	var code []string
	require.NoError(t, fs.WalkDir(luaFiles, "lua", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := luaFiles.ReadFile(path)
		code = append(code, comment.ReplaceAllString(string(b), ""))
		return err
	}))
	prelude, err := luaFiles.ReadFile("lua/prelude.lua")
	require.NoError(t, err)
	all := strings.Join(code, "\n")
	defs := regexp.MustCompile(`(?m)^local\s+(?:function\s+(\w+)|([\w\s,]+?)\s*=)`).FindAllStringSubmatch(string(prelude), -1)
	require.NotEmpty(t, defs)
	for _, d := range defs {
		for _, name := range strings.Split(d[1]+d[2], ",") {
			name = strings.TrimSpace(name)
			uses := len(regexp.MustCompile(`\b`+name+`\b`).FindAllString(all, -1)) - 1
			require.Positive(t, uses, "the prelude's %s is used nowhere", name)
		}
	}
}

// loadLua refuses a script missing from lua/ and a file of lua/ that is no
// script.
func TestLoadLuaRefusesMissingAndUnknownFiles(t *testing.T) {
	files := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(luaFiles, "lua", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := luaFiles.ReadFile(path)
		files[path] = &fstest.MapFile{Data: b}
		return err
	}))
	_, err := loadLua(files)
	require.NoError(t, err)

	files["lua/stray.lua"] = &fstest.MapFile{Data: []byte("return 1")}
	delete(files, "lua/claim.lua")
	_, err = loadLua(files)
	require.ErrorContains(t, err, "lua/stray.lua is no script")
	require.ErrorContains(t, err, "lua/claim.lua is missing")
}
