// Package npminstall runs one of the repository's test/*-install scripts
// (a pinned program from npm into a cache directory) once per test
// process, for the end-to-end tests of real Node-RED and n8n. By the
// scripts' convention exit 3 means npm or the registry cannot be reached:
// the test is skipped, saying why; any other failure fails it.
package npminstall

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Install is one install script, run at most once.
type Install struct {
	Script string // under test/, e.g. "nodered-install"
	What   string // the program's name in a skip message, e.g. "Node-RED"

	once sync.Once
	dir  string
	skip string
	err  error
}

// Dir returns the install directory, installing on first use.
func (i *Install) Dir(t testing.TB) string {
	t.Helper()
	i.once.Do(func() {
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "test", i.Script))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 3:
			i.skip = strings.TrimSpace(stderr.String())
		case err != nil:
			i.err = fmt.Errorf("test/%s: %w\n%s", i.Script, err, stderr.String())
		default:
			i.dir = strings.TrimSpace(string(out))
		}
	})
	if i.skip != "" {
		t.Skipf("%s cannot be installed, so it is not tested: %s", i.What, i.skip)
	}
	if i.err != nil {
		t.Fatal(i.err)
	}
	return i.dir
}
