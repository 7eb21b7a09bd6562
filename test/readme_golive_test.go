package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
)

// The README's "Going live" block, run as written against a real Redis:
// `flowgate env` writes the .env, the shell loads it, `flowgate check`
// passes (exit 0) and prints its table. The block's `go build` line is
// replaced by the binary the tests built; the REDIS_URL in the block is
// pointed at the test's database.
func TestReadmeGoingLiveCommandsWork(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- golive -->\\s*```bash\\n(.*?)```").FindStringSubmatch(string(raw))
	require.NotNil(t, m, "README.md has no <!-- golive --> block")
	block := m[1]
	require.Contains(t, block, "go build -o flowgate ./sidecar")
	require.Contains(t, block, "./flowgate env > .env")
	require.Contains(t, block, "./flowgate check")

	dir := t.TempDir()
	require.NoError(t, os.Symlink(flowgatetest.Binary(t), filepath.Join(dir, "flowgate")))
	db := redistest.New(t)
	script := strings.Replace(block, "go build -o flowgate ./sidecar", "test -x ./flowgate", 1)
	script = strings.ReplaceAll(script, "redis://127.0.0.1:6379/0", db.URL())
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDIS_URL=") // nothing of the test's own environment leaks in
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the Going live block failed:\n%s\n--- output:\n%s", block, out)
	for _, row := range []string{"configuration", "redis ", "redis persistence", "ops prefix flowgate:", "cloud9"} {
		require.Contains(t, string(out), "\n"+row, "check's table has a %q row:\n%s", row, out)
	}
	require.Regexp(t, `redis\s+OK\s+reachable`, string(out))
	env, err := os.ReadFile(filepath.Join(dir, ".env"))
	require.NoError(t, err)
	require.Contains(t, string(env), "\nHMAC_SECRET=")
	require.Contains(t, string(env), "\nREDIS_URL="+db.URL()+"\n")
}
