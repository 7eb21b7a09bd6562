package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
)

// readmeBuildLine is the line of README's quickstart and Going live blocks
// that builds the binary; the person test links the tests' binary instead
// (a fresh checkout's build is ≈ a minute and a half of compiling, and the
// binary is the same).
const readmeBuildLine = "go build -o flowgate ./sidecar"

// readmeTestCommand is README's "one test, no lint gate" form of the test
// command; the person test runs it on a small package selection.
const readmeTestCommand = "FLOWGATE_LINT=skip test/run -run TestX ./test/"

// personCheckout copies the checkout's files (tracked, and untracked ones
// git does not ignore: what a clone of this tree holds) into a new
// directory, with the tests' binary as ./flowgate, and returns it. The
// person's .env, flowgate.log and test runs then land there, never in the
// developer's checkout.
func personCheckout(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	require.NoError(t, err)
	dir := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() { // deleted in the work tree, or a link
			continue
		}
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		dst := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, data, st.Mode().Perm()))
	}
	require.NoError(t, os.Symlink(flowgatetest.Binary(t), filepath.Join(dir, "flowgate")))
	return dir
}

// asWritten is a README block as the person test runs it: the build line
// replaced by a check that the binary is there, the fixed address
// (localhost:8080, taken on a shared machine) by addr.
func asWritten(t *testing.T, block, addr string) string {
	t.Helper()
	block = strings.Replace(block, readmeBuildLine, "test -x ./flowgate", 1)
	return strings.ReplaceAll(block, "http://localhost:8080", "http://"+addr)
}

// TestReadmeAsAPersonFollowsIt follows README as a person would, in one
// bash shell, in order, in a copy of the checkout: the quickstart's blocks
// (the start block as written: the binary in the background, the wait
// loop), Stop, the quickstart again (new secrets, a new process: the old
// one must be gone, or createPatient would answer 401), Going live (the
// .env written in the checkout, the Cloud9 choice edited in, `set -a; .
// ./.env`, `flowgate check`), then README's test command in the same
// shell, whose REDIS_URL and secrets are now the deployment's.
//
// The test command runs on one small package (./test/flowgatetest/, the
// harness's hermetic environment) rather than the whole suite: the suite
// inside the suite would double CI's time. What the whole suite would meet
// in that shell is held by the ordinary run: TestComposeConfigIgnoresDotEnvAndShell
// (a .env beside the compose file), TestBinaryStartIgnoresAHostileEnvironment
// and TestReadmeGoingLiveCommandsWork (REDIS_URL, CLOUD9_* and secrets in
// the environment); here test/run itself must start its private Redis,
// not use the shell's REDIS_URL.
func TestReadmeAsAPersonFollowsIt(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "openssl", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("README's steps need %s, which is not installed", tool)
		}
	}
	blocks := readmeQuickstart(t)
	checkQuickstartCovers(t, blocks)
	start, stop := blocks[0], blocks[len(blocks)-1]
	require.Contains(t, start.body, readmeBuildLine, "the quickstart builds the binary and runs it (no orphaned go run child)")
	require.Contains(t, start.body, "FLOWGATE_PID=$!", "the start block keeps the binary's pid for Stop")
	require.Contains(t, stop.body, `kill "$FLOWGATE_PID"`)
	golive := goliveBlock(t)
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.Contains(t, string(raw), readmeTestCommand, "README's test command")

	dir := personCheckout(t)
	addr := freeAddr(t)
	db := redistest.New(t)
	sim := startSim(t, 1, "5/min")
	choose := "printf '%s\\n' CLOUD9_ENDPOINT=" + sim.URL + " CLOUD9_CLIENT_ID=person-client CLOUD9_USERNAME=person-user " +
		"CLOUD9_PASSWORD=person-password CLOUD9_VENDOR_USERNAME=flowgate CLOUD9_PROVIDER_GUID=" + simProviderGUID + " >> .env"

	var script strings.Builder
	step := func(name, body string) {
		script.WriteString("echo '@@step " + name + "@@'\n" + body + "\n")
	}
	script.WriteString("set -euo pipefail\n")
	quickstart := func(round string) {
		step(round+": start", asWritten(t, start.body, addr))
		for i, b := range blocks[1 : len(blocks)-1] {
			step(round+": block "+string(rune('1'+i)), asWritten(t, b.body, addr))
		}
		step(round+": stop", asWritten(t, stop.body, addr)+
			"\nif curl -fs \"$FLOWGATE/readyz\" >/dev/null; then echo 'something still serves after Stop'; exit 1; fi")
	}
	quickstart("quickstart")
	quickstart("quickstart again")
	golive = strings.ReplaceAll(strings.Replace(golive, goliveEditLine, choose, 1), "redis://127.0.0.1:6379/0", db.URL())
	step("going live", asWritten(t, golive, addr))
	step("the test command", strings.Replace(readmeTestCommand, "-run TestX ./test/", "-run 'TestHermetic|TestWithoutFlowgate' ./test/flowgatetest/", 1))
	step("done", "true")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(flowgatetest.Env(), "FLOWGATE_ADDR="+addr) // the one setting README does not give: a free port
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	runErr := cmd.Run()
	t.Logf("README as a person: %s", time.Since(began).Round(time.Millisecond))
	if runErr != nil || !strings.Contains(out.String(), "@@step done@@") {
		steps := regexp.MustCompile(`@@step ([^@]+)@@`).FindAllStringSubmatch(out.String(), -1)
		last := "none"
		if len(steps) > 0 {
			last = steps[len(steps)-1][1]
		}
		t.Fatalf("README as a person stopped at %q (%v):\n%s\n--- flowgate.log:\n%s", last, runErr, tail(out.String(), 6000), tailFile(dir, "flowgate.log"))
	}
	o := out.String()
	require.Contains(t, o, "flowgate stopped (exit 0)")
	require.Regexp(t, `cloud9\s+OK\s+credentials accepted`, o)
	require.Contains(t, o, "(private, killed on exit)", "test/run starts its own Redis, whatever REDIS_URL the shell holds")
	require.NotContains(t, o, "FLOWGATE_TEST_REDIS_URL="+db.URL())
	require.Regexp(t, `(?m)^ok\s+github.com/flowgate/flowgate/test/flowgatetest`, o)
	st, err := os.Stat(filepath.Join(dir, ".env"))
	require.NoError(t, err, "Going live writes .env in the checkout")
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// A start that fails (here an invalid setting) ends the quickstart's wait
// loop with the log's last lines, instead of spinning forever.
func TestReadmeQuickstartWaitStopsWhenFlowgateDies(t *testing.T) {
	blocks := readmeQuickstart(t)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(flowgatetest.Binary(t), filepath.Join(dir, "flowgate")))
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+asWritten(t, blocks[0].body, addr))
	cmd.Dir = dir
	cmd.Env = append(flowgatetest.Env(), "FLOWGATE_ADDR="+addr, "LOG_FORMAT=xml")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, ctx.Err(), "the wait loop spun until the deadline:\n%s", out)
	require.Contains(t, string(out), "flowgate exited:")
	require.Contains(t, string(out), "LOG_FORMAT", "the log's last lines say why")
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// tailFile is the last 4 KB of dir/name, or why not.
func tailFile(dir, name string) string {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err.Error()
	}
	return tail(string(data), 4000)
}
