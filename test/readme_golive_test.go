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

// goliveEditLine is the block's step where the operator edits .env to
// choose a Cloud9; the test replaces it with what an operator would write.
const goliveEditLine = "${EDITOR:-vi} .env"

// goliveBlock is README's <!-- golive --> block.
func goliveBlock(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- golive -->\\s*```bash\\n(.*?)```").FindStringSubmatch(string(raw))
	require.NotNil(t, m, "README.md has no <!-- golive --> block")
	block := m[1]
	for _, want := range []string{"go build -o flowgate ./sidecar", "./flowgate env .env", goliveEditLine, "./flowgate check"} {
		require.Contains(t, block, want)
	}
	return block
}

// runGolive runs block in a new directory holding the tests' binary as
// ./flowgate, with the block's `go build` line replaced by a check that
// it is there, its REDIS_URL pointed at redisURL and its edit step by
// edit. The environment is Env's: nothing of the test process's own
// settings or secrets. It returns the directory, the output and the exit
// code.
func runGolive(t *testing.T, block, redisURL, edit string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(flowgatetest.Binary(t), filepath.Join(dir, "flowgate")))
	script := strings.Replace(block, "go build -o flowgate ./sidecar", "test -x ./flowgate", 1)
	script = strings.ReplaceAll(script, "redis://127.0.0.1:6379/0", redisURL)
	script = strings.Replace(script, goliveEditLine, edit, 1)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = flowgatetest.Env()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee := (*exec.ExitError)(nil); err != nil {
		require.ErrorAs(t, err, &ee, "%s", out)
		code = ee.ExitCode()
	}
	return dir, string(out), code
}

// The README's "Going live" block, run as written against a real Redis:
// `flowgate env .env` writes the .env (mode 0600), the operator chooses a
// Cloud9 in it (here the simulator run as its own process, as a real
// Cloud9), the shell loads it, `flowgate check` passes (exit 0) and prints
// its table. Without the choice the same block stops at check with the
// one line that says how to choose. A test process whose environment
// holds a hostile REDIS_URL, CLOUD9_* or secrets (a shell that loaded
// another .env) gets the same outcomes: the block's shell never sees them.
func TestReadmeGoingLiveCommandsWork(t *testing.T) {
	block := goliveBlock(t)
	db := redistest.New(t)
	sim := startSim(t, 1, "5/min")
	choose := "printf '%s\\n' CLOUD9_ENDPOINT=" + sim.URL + " CLOUD9_CLIENT_ID=golive-client CLOUD9_USERNAME=golive-user " +
		"CLOUD9_PASSWORD=golive-password CLOUD9_VENDOR_USERNAME=flowgate CLOUD9_PROVIDER_GUID=" + simProviderGUID + " >> .env"
	for _, name := range []string{"clean environment", "hostile environment"} {
		t.Run(name, func(t *testing.T) {
			if name == "hostile environment" {
				setHostileEnv(t)
			}
			dir, out, code := runGolive(t, block, db.URL(), choose)
			require.Zero(t, code, "the Going live block failed:\n%s\n--- output:\n%s", block, out)
			for _, row := range []string{"configuration", "redis ", "redis persistence", "ops prefix flowgate:", "cloud9"} {
				require.Contains(t, out, "\n"+row, "check's table has a %q row:\n%s", row, out)
			}
			require.Regexp(t, `redis\s+OK\s+reachable`, out)
			require.Regexp(t, `cloud9\s+OK\s+credentials accepted`, out)
			st, err := os.Stat(filepath.Join(dir, ".env"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the .env holds the secrets")
			env, err := os.ReadFile(filepath.Join(dir, ".env"))
			require.NoError(t, err)
			require.Contains(t, string(env), "\nHMAC_SECRET=")
			require.Contains(t, string(env), "\nOUTBOUND_HMAC_SECRET=")
			require.Contains(t, string(env), "\nREDIS_URL="+db.URL()+"\n")

			_, out, code = runGolive(t, block, db.URL(), "true")
			require.Equal(t, 1, code, "no Cloud9 chosen: check fails\n%s", out)
			require.Contains(t, out, "CLOUD9_ENDPOINT: a real Redis needs a real Cloud9")
			require.Contains(t, out, "CLOUD9_SIMULATOR=true")
			require.Regexp(t, `configuration\s+FAIL`, out)
		})
	}
}
