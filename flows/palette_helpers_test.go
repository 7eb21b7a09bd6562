package flows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/noderedtest"
)

// paletteInstallRE is the palette README's install block.
var paletteInstallRE = regexp.MustCompile("(?s)<!-- palette-install[^>]*-->\\s*```sh\\n(.*?)```")

// installPalette installs the palette exactly as its README says, in one
// bash shell from the checkout's root: `npm pack` in the palette's folder,
// then `npm install <abs path>.tgz` in ~/.node-red — here HOME is a new
// directory whose .node-red is userDir, which holds the package.json
// Node-RED creates on its first start (without one npm would walk up and
// install into whatever package.json it finds above).
func installPalette(t *testing.T, userDir string) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the palette cannot be packed")
	}
	readme, err := os.ReadFile(filepath.Join(paletteDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := paletteInstallRE.FindSubmatch(readme)
	if m == nil {
		t.Fatal("the palette's README has no <!-- palette-install --> block")
	}
	block := string(m[1])
	if !strings.Contains(block, "npm pack") || !strings.Contains(block, "cd ~/.node-red && npm install") {
		t.Fatalf("the palette's install block does not pack and install in ~/.node-red:\n%s", block)
	}
	pkg := `{"name":"node-red-project","description":"A Node-RED Project","version":"0.0.1","private":true}`
	if err := os.WriteFile(filepath.Join(userDir, "package.json"), []byte(pkg), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.Symlink(userDir, filepath.Join(home, ".node-red")); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	packed, _ := filepath.Glob(filepath.Join(paletteDir, "*.tgz"))
	t.Cleanup(func() { // the tarball the block built in the checkout (git ignores *.tgz there)
		now, _ := filepath.Glob(filepath.Join(paletteDir, "*.tgz"))
		for _, f := range now {
			if !slices.Contains(packed, f) {
				_ = os.Remove(f)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = root
	cmd.Env = append(flowgatetest.Env(), "HOME="+home)
	if cache, err := exec.Command("npm", "config", "get", "cache").Output(); err == nil { // the user's npm cache, not a new one
		cmd.Env = append(cmd.Env, "npm_config_cache="+strings.TrimSpace(string(cache)))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the palette README's install block failed: %v\n%s\n--- output:\n%s", err, block, out)
	}
	raw, err := os.ReadFile(filepath.Join(userDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &saved); err != nil || saved.Dependencies[paletteModule] == "" {
		t.Fatalf("the user directory's package.json does not list %s: %s", paletteModule, raw)
	}
	// What a user gets: the runtime files, the example, the README; no tests.
	for _, f := range []string{"package.json", "README.md", "lib/flowgate.js", "nodes/flowgate-task.html", "examples/flowgate-demo.json"} {
		if _, err := os.Stat(filepath.Join(userDir, "node_modules", paletteModule, f)); err != nil {
			t.Errorf("the installed package lacks %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(userDir, "node_modules", paletteModule, "test")); err == nil {
		t.Error("the installed package carries its tests")
	}
}

// paletteSchedule is the availability test schedule with its consultation
// type renamed typeID: holds channels are per type, not per Redis database.
func paletteSchedule(t *testing.T, typeID string) string {
	t.Helper()
	raw, err := os.ReadFile("../orchestrator/holds/availability/testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte(`"id": "consultation"`), []byte(`"id": "`+typeID+`"`))
	path := filepath.Join(t.TempDir(), "schedule.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// nrClient calls the test flow's endpoints on Node-RED.
type nrCall struct {
	t  *testing.T
	nr *noderedtest.Proc
}

// post sends body as JSON (GET when body is nil) and decodes the answer into out.
func (c nrCall) call(path string, body any, out any) int {
	c.t.Helper()
	method, raw := http.MethodGet, []byte(nil)
	headers := map[string]string{}
	if body != nil {
		method = http.MethodPost
		raw, _ = json.Marshal(body)
		headers["Content-Type"] = "application/json"
	}
	status, _, resp := c.nr.Do(c.t, method, path, headers, raw)
	if out != nil {
		if err := json.Unmarshal(resp, out); err != nil {
			c.t.Fatalf("%s %s: %d %s: %v", method, path, status, resp, err)
		}
	}
	return status
}

// waitFor polls f every 200 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// taskAgain is GET /queue/{id}. Two equal signed GETs in one second are one
// request to flowgate's replay guard (no body to carry a nonce): a
// "replayed" refusal is retried in the next second.
func (fg *flowgate) taskAgain(id string) contracts.Task {
	fg.t.Helper()
	for {
		status, out := fg.do(http.MethodGet, "/queue/"+id, nil, nil)
		if status == http.StatusUnauthorized && strings.Contains(string(out), "replayed") {
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
			continue
		}
		var res contracts.TaskResponse
		if status != http.StatusOK || json.Unmarshal(out, &res) != nil {
			fg.t.Fatalf("GET /queue/%s: %d %s", id, status, out)
		}
		return res.Task
	}
}

func jsonEq(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}
