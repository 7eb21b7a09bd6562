package tasks

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// Every top-level local of the prelude is used, by a script or by the
// prelude itself: luacheck sees them as read-only globals of the scripts
// (.luacheckrc), so it cannot tell.
func TestPreludeDefinesNothingUnused(t *testing.T) {
	comment := regexp.MustCompile(`--[^\n]*`)
	code := []string{comment.ReplaceAllString(lua.prelude, "")}
	for _, p := range lua.lib {
		code = append(code, comment.ReplaceAllString(p.body, ""))
	}
	all := strings.Join(code, "\n")
	defs := regexp.MustCompile(`(?m)^local\s+(?:function\s+(\w+)|([\w\s,]+?)\s*=)`).FindAllStringSubmatch(code[0], -1)
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
	delete(files, "lua/ack.lua")
	_, err = loadLua(files)
	require.ErrorContains(t, err, "lua/stray.lua is no script")
	require.ErrorContains(t, err, "lua/ack.lua is missing")
}
