package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/flowgatetest"
)

// quickstartBlock is one marked block of the README.
//
// The Quickstart section marks each fenced bash block it means to be run
// with an HTML comment right above it:
//
//	<!-- quickstart: start … -->   the block that starts flowgate: its export
//	                               lines give the binary's environment (the
//	                               test starts the binary itself instead of
//	                               `go run ./sidecar`)
//	<!-- quickstart: stop -->      the block that stops it (run by
//	                               TestReadmeAsAPersonFollowsIt, which runs
//	                               the start block as written too)
//	<!-- quickstart -->            a block run by bash, in order, in one shell
//	<!-- quickstart
//	expect: TEXT                   …whose output must also contain TEXT
//	-->
type quickstartBlock struct {
	start  bool     // the start block
	stop   bool     // the stop block
	expect []string // texts its output must contain
	body   string
}

var quickstartRE = regexp.MustCompile("(?s)<!-- quickstart(.*?)-->\\s*```bash\\n(.*?)```")

// readmeQuickstart returns the marked blocks of README.md's Quickstart section.
func readmeQuickstart(t *testing.T) []quickstartBlock {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, "\n## Quickstart")
	if i < 0 {
		t.Fatal("README.md has no '## Quickstart' section")
	}
	section := text[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	var blocks []quickstartBlock
	for _, m := range quickstartRE.FindAllStringSubmatch(section, -1) {
		b := quickstartBlock{start: strings.HasPrefix(strings.TrimSpace(m[1]), ": start"),
			stop: strings.HasPrefix(strings.TrimSpace(m[1]), ": stop"), body: m[2]}
		for _, line := range strings.Split(m[1], "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "expect:"); ok {
				b.expect = append(b.expect, strings.TrimSpace(v))
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// checkQuickstartCovers fails unless the blocks cover every job the README
// promises: a start block first, then booking, a signed VM task, a buffer
// message, a hold with its stream, and the board.
func checkQuickstartCovers(t *testing.T, blocks []quickstartBlock) {
	t.Helper()
	if len(blocks) < 2 || !blocks[0].start {
		t.Fatalf("the Quickstart needs a <!-- quickstart: start --> block first and runnable <!-- quickstart --> blocks after it; found %d blocks", len(blocks))
	}
	var all strings.Builder
	stops := 0
	for _, b := range blocks[1:] {
		if b.start {
			t.Fatal("only the first quickstart block may be the start block")
		}
		if b.stop {
			stops++
		}
		all.WriteString(b.body)
	}
	if stops != 1 || !blocks[len(blocks)-1].stop {
		t.Fatalf("the Quickstart needs one <!-- quickstart: stop --> block, last (found %d)", stops)
	}
	for _, want := range []string{"/createPatient", "/getApptSlots", "/createAppt", "POST /queue", "/queue/claim", "/ack",
		"openssl dgst", "/api/buffer/enqueue", "/v1/holds", "/v1/holds/stream", "/board"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no quickstart block runs %q", want)
		}
	}
}

// quickstartEnv runs the start block's export lines in an empty environment
// and returns the variables they set.
func quickstartEnv(t *testing.T, start string) map[string]string {
	t.Helper()
	var exports []string
	for _, line := range strings.Split(start, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "export ") {
			exports = append(exports, line)
		}
	}
	if len(exports) == 0 {
		t.Fatalf("the quickstart's start block exports nothing:\n%s", start)
	}
	script := "set -euo pipefail\n" + strings.Join(exports, "\n") + "\nenv -0\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the quickstart's exports failed: %v\n%s", err, script)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch k {
		case "PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_":
			continue
		}
		env[k] = v
	}
	return env
}

// TestReadmeQuickstart: the README's quickstart, run as written against the
// built binary, so its commands stay true.
//
// The blocks run with `set -euo pipefail`, FLOWGATE set to the binary's
// base URL; a block fails on a non-zero status (curl -f, jq -e) or a
// missing expected text, and the test prints its text and output.
func TestReadmeQuickstart(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the quickstart needs %s, which is not installed", tool)
		}
	}
	blocks := readmeQuickstart(t)
	checkQuickstartCovers(t, blocks)
	env := quickstartEnv(t, blocks[0].body)
	for _, k := range []string{"HMAC_SECRET", "BUFFER_API_TOKEN"} {
		if env[k] == "" {
			t.Fatalf("the quickstart's start block does not export %s (env: %v)", k, keysOf(env))
		}
	}
	if _, ok := env["REDIS_URL"]; ok {
		t.Fatal("the quickstart must run on the embedded Redis: its start block sets REDIS_URL")
	}
	p := flowgatetest.Start(t, env) // no REDIS_URL: embedded Redis and the Cloud9 simulator
	blocks = blocks[:len(blocks)-1] // the stop block: the harness stops its binary itself

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks[1:] {
		script.WriteString("echo '" + blockMarker(i+1) + "'\n" + b.body + "\n")
	}
	script.WriteString("echo '" + blockMarker(len(blocks)) + "'\n")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(flowgatetest.Env(), "FLOWGATE="+p.Base)
	for k, v := range env {
		if k != "FLOWGATE" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	runErr := cmd.Run()
	t.Logf("quickstart: %d blocks in %s", len(blocks)-1, time.Since(started).Round(time.Millisecond))

	outputs := splitByMarkers(out.String(), len(blocks))
	for i, b := range blocks[1:] {
		n := i + 1
		o, reached := outputs[n]
		if !reached {
			break
		}
		_, finished := outputs[n+1]
		if !finished {
			t.Fatalf("quickstart block %d failed (%v):\n--- block ---\n%s--- output ---\n%s", n, runErr, b.body, o)
		}
		for _, want := range b.expect {
			if !strings.Contains(o, want) {
				t.Errorf("quickstart block %d: output lacks %q:\n--- block ---\n%s--- output ---\n%s", n, want, b.body, o)
			}
		}
	}
	if runErr != nil && !t.Failed() {
		t.Fatalf("quickstart failed (%v):\n%s", runErr, out.String())
	}
}

func blockMarker(n int) string { return "@@quickstart-block-" + strconv.Itoa(n) + "@@" }

// splitByMarkers maps block number → its output, for every marker printed
// (marker n is printed before block n; the last one after the last block).
func splitByMarkers(out string, last int) map[int]string {
	got := map[int]string{}
	for n := 1; n <= last; n++ {
		m := blockMarker(n) + "\n"
		i := strings.Index(out, m)
		if i < 0 {
			break
		}
		rest := out[i+len(m):]
		if j := strings.Index(rest, blockMarker(n+1)); j >= 0 {
			rest = rest[:j]
		}
		got[n] = rest
	}
	return got
}

func keysOf(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
