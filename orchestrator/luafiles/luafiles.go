// Package luafiles reads a package's Lua scripts from the folder it
// embeds (//go:embed): one file per script, named after it, every file a
// script the package lists and every listed script there. The task
// ledger's and the hold engine's scripts are read this way
// (docs/keyspace.md). It imports only the standard library.
package luafiles

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
)

// Files is the Lua of one folder, by script name: the file's path under
// the folder without ".lua" ("claim", "locator/drop").
type Files struct {
	owner  string // names the reader in errors, e.g. "tasks: the ledger's Lua"
	dir    string
	byName map[string]string
	bad    []string
}

// Read reads every .lua file under dir of fsys, subfolders included.
// owner prefixes its errors and Check's.
func Read(fsys fs.FS, dir, owner string) (*Files, error) {
	f := &Files{owner: owner, dir: dir, byName: map[string]string{}}
	err := fs.WalkDir(fsys, dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".lua") {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		f.byName[strings.TrimSuffix(strings.TrimPrefix(path, dir+"/"), ".lua")] = string(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s/: %w", owner, dir, err)
	}
	return f, nil
}

// Take is script name's text ("" when its file is missing, which Check
// then reports). Each name is taken once.
func (f *Files) Take(name string) string {
	body, ok := f.byName[name]
	if !ok {
		f.bad = append(f.bad, f.dir+"/"+name+".lua is missing")
	}
	delete(f.byName, name)
	return body
}

// Check reports every script Take found missing and every file no Take
// asked for (a file that is no listed script).
func (f *Files) Check() error {
	bad := slices.Clone(f.bad)
	for name := range f.byName {
		bad = append(bad, f.dir+"/"+name+".lua is no listed script")
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return errors.New(f.owner + ": " + strings.Join(bad, "; "))
}

var (
	luaComment = regexp.MustCompile(`--[^\n]*`)
	topLocal   = regexp.MustCompile(`(?m)^local\s+(?:function\s+(\w+)|([\w\s,]+?)\s*=)`)
)

// UnusedLocals are the top-level locals of prelude that neither prelude
// nor any of scripts uses (comments left out). luacheck sees a prelude's
// names as read-only globals of the scripts, so it cannot tell.
func UnusedLocals(prelude string, scripts ...string) []string {
	code := luaComment.ReplaceAllString(prelude, "")
	all := code
	for _, s := range scripts {
		all += "\n" + luaComment.ReplaceAllString(s, "")
	}
	var unused []string
	for _, d := range topLocal.FindAllStringSubmatch(code, -1) {
		for _, name := range strings.Split(d[1]+d[2], ",") {
			name = strings.TrimSpace(name)
			if len(regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).FindAllString(all, -1)) < 2 {
				unused = append(unused, name)
			}
		}
	}
	return unused
}
