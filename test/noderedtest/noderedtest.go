// Package noderedtest runs a real Node-RED for end-to-end tests: the
// version pinned in test/nodered-install, installed from npm into a cache
// directory once (the test is skipped, saying why, only when npm cannot be
// reached), started on a free port with a fresh user directory holding the
// flows a test imports (through flows/node-red/import.js, as
// docker-compose.yml does), and stopped when the test ends.
package noderedtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/npminstall"
)

var install = npminstall.Install{Script: "nodered-install", What: "Node-RED"}

// RepoRoot is the repository's root directory.
func RepoRoot() string { return npminstall.RepoRoot() }

// Dir returns the Node-RED install directory, installing it on first use
// (test/nodered-install). It skips the test when node, npm or the npm
// registry is unavailable, and fails it on any other install error.
func Dir(t testing.TB) string {
	t.Helper()
	return install.Dir(t)
}

// settings is the settings.js of a test instance: no editor extras, no
// palette installs, no telemetry; function nodes may use built-in modules.
const settings = `module.exports = {
  flowFile: "flows.json",
  credentialSecret: false,
  uiHost: "127.0.0.1",
  diagnostics: { enabled: false, ui: false },
  telemetry: { enabled: false, updateNotification: false },
  externalModules: { palette: { allowInstall: false }, modules: { allowInstall: false } },
  functionExternalModules: true,
  logging: { console: { level: "info" } }
};
`

// Proc is a running Node-RED.
type Proc struct {
	Base    string // http://127.0.0.1:port (httpNodeRoot and httpAdminRoot are /)
	Logs    *logtest.Buffer
	UserDir string // the user directory (settings.js, flows.json)
	dir     string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Start imports flowFiles (absolute, or relative to the repository root) into a
// new user directory and starts Node-RED there with env added to the
// test's environment. It waits until the flows have started.
func Start(t testing.TB, env map[string]string, flowFiles ...string) *Proc {
	t.Helper()
	return StartWith(t, Options{Env: env, Flows: flowFiles})
}

// Options configures StartWith.
type Options struct {
	Env   map[string]string // added to the test's environment
	Flows []string          // flow files to import (absolute, or relative to the repository root)
	// Addr is the host:port Node-RED listens on; empty: a free loopback
	// port (flowgatetest.FreeAddr gives one a test can name before).
	Addr string
	// Prepare, when set, runs on the new user directory once settings.js
	// and flows.json are written, before Node-RED starts: installing a
	// package there as the palette manager does, writing flows_cred.json
	// (settings.js keeps credentials in plain text).
	Prepare func(userDir string)
}

// StartWith is Start with more options.
func StartWith(t testing.TB, o Options) *Proc {
	t.Helper()
	dir := Dir(t)
	user := t.TempDir()
	if err := os.WriteFile(filepath.Join(user, "settings.js"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	imp := []string{filepath.Join(RepoRoot(), "flows", "node-red", "import.js"), filepath.Join(user, "flows.json")}
	for _, f := range o.Flows {
		if !filepath.IsAbs(f) {
			f = filepath.Join(RepoRoot(), f)
		}
		imp = append(imp, f)
	}
	if out, err := exec.Command("node", imp...).CombinedOutput(); err != nil {
		t.Fatalf("import.js: %v\n%s", err, out)
	}
	if o.Prepare != nil {
		o.Prepare(user)
	}
	addr := o.Addr
	if addr == "" {
		addr = flowgatetest.FreeAddr(t)
	}
	port := addr[strings.LastIndex(addr, ":")+1:]
	p := &Proc{Base: "http://" + addr, Logs: &logtest.Buffer{}, UserDir: user, dir: dir, exited: make(chan struct{})}
	p.cmd = exec.Command("node", filepath.Join(dir, "node_modules", "node-red", "red.js"),
		"--port", port, "--userDir", user, "--settings", filepath.Join(user, "settings.js"))
	p.cmd.Env = flowgatetest.WithoutFlowgate(os.Environ()) // the kit's FLOWGATE_*, HMAC_SECRET: only the test's
	for k, v := range o.Env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.Logs, p.Logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.stop(t) })
	p.waitStarted(t)
	return p
}

// PID is the Node-RED process's id (node itself: red.js is started
// without a shell), for its CPU time.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

func (p *Proc) waitStarted(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(p.Logs.Lines("Started flows")) == 0 {
		select {
		case <-p.exited:
			t.Fatalf("Node-RED exited before its flows started:\n%s", p.Logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Node-RED flows not started after 60 s:\n%s", p.Logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *Proc) stop(t testing.TB) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if t.Failed() {
		t.Logf("Node-RED logs:\n%s", p.Logs.String())
	}
}

// Status is a node's status as the editor shows it.
type Status struct {
	Fill  string `json:"fill"`
	Shape string `json:"shape"`
	Text  string `json:"text"`
}

// statusScript subscribes to status/# on Node-RED's editor websocket
// (/comms, the retained latest status of every node arrives at once),
// collects for argv[4] ms and prints {nodeID: status}. ws is Node-RED's
// own dependency.
const statusScript = `const WebSocket = require(process.argv[2]);
const ws = new WebSocket(process.argv[3]);
const out = {};
ws.on("open", () => ws.send(JSON.stringify({ subscribe: "status/#" })));
ws.on("error", (e) => { process.stderr.write(String(e)); process.exit(1); });
ws.on("message", (d) => {
  for (const m of [].concat(JSON.parse(d))) {
    if (m.topic && m.topic.startsWith("status/")) { out[m.topic.slice(7)] = m.data; }
  }
});
setTimeout(() => { process.stdout.write(JSON.stringify(out)); process.exit(0); }, Number(process.argv[4]));
`

// Statuses returns the current status of every node that has one, by node
// id (a node inside a subflow instance is "<instance id>-<node id>").
func (p *Proc) Statuses(t testing.TB) map[string]Status {
	t.Helper()
	f := filepath.Join(t.TempDir(), "status.js")
	if err := os.WriteFile(f, []byte(statusScript), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(p.Base, "http") + "/comms"
	out, err := exec.CommandContext(ctx, "node", f, filepath.Join(p.dir, "node_modules", "ws"), ws, "1000").Output()
	if err != nil {
		t.Fatalf("reading node status over %s: %v", ws, err)
	}
	var st map[string]Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status script: %v: %s", err, out)
	}
	return st
}

// WaitStatus polls Statuses until node id's status satisfies ok, and
// returns it; it fails the test after timeout with the last status seen.
func (p *Proc) WaitStatus(t testing.TB, id string, timeout time.Duration, ok func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, found := p.Statuses(t)[id]
		if found && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: status %+v (found %v) after %s", id, st, found, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Do sends a request to Node-RED and returns status, content type and body.
func (p *Proc) Do(t testing.TB, method, path string, headers map[string]string, body []byte) (int, string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.Base+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s via Node-RED: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}
