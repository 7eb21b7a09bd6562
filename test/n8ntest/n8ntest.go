// Package n8ntest runs a real n8n for end-to-end tests: the version pinned
// in test/n8n-install, installed from npm into a cache directory once (the
// test is skipped, saying why, only when npm cannot be reached), with a
// fresh user folder (its own SQLite database) per instance. Workflows go in
// through n8n's own CLI (import:workflow, update:workflow), as an operator
// would; Start runs `n8n start` on a free port and stops it when the test
// ends; Execute runs `n8n execute --id` beside it.
//
// Every n8n command boots the whole of n8n: about 15–25 s each on 2 cores.
package n8ntest

import (
	"bytes"
	"context"
	"fmt"
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

var install = npminstall.Install{Script: "n8n-install", What: "n8n"}

// RepoRoot is the repository's root directory.
func RepoRoot() string { return npminstall.RepoRoot() }

// Dir returns the n8n install directory, installing it on first use
// (test/n8n-install; the first install builds sqlite3 and takes minutes).
// It skips the test when node, npm or the npm registry is unavailable
// (exit 3), and fails it on any other install error.
func Dir(t testing.TB) string {
	t.Helper()
	return install.Dir(t)
}

// Instance is one n8n user folder (database, encryption key) and the
// environment every command of it runs with.
type Instance struct {
	Base string // http://127.0.0.1:port once started
	Logs *logtest.Buffer
	// UserFolder is N8N_USER_FOLDER: n8n keeps its files in UserFolder/.n8n,
	// community packages in UserFolder/.n8n/nodes/node_modules.
	UserFolder string

	bin  string
	env  []string
	port string

	cmd    *exec.Cmd
	exited chan struct{}
}

// New prepares an instance in a new user folder. env is added to every
// command's environment (the workflows' $env); the test's own N8N_*, DB_*,
// EXECUTIONS_* and QUEUE_* variables and flowgate's settings and secrets
// (flowgatetest.WithoutFlowgate) are left out, so only what the test
// passes configures n8n and the workflows.
func New(t testing.TB, env map[string]string) *Instance {
	t.Helper()
	dir := Dir(t)
	user := t.TempDir()
	addr := flowgatetest.FreeAddr(t)
	i := &Instance{
		bin:        filepath.Join(dir, "node_modules", "n8n", "bin", "n8n"),
		port:       addr[strings.LastIndex(addr, ":")+1:],
		Logs:       &logtest.Buffer{},
		UserFolder: user,
	}
	for _, kv := range flowgatetest.WithoutFlowgate(os.Environ()) { // the workflows' FLOWGATE_URL, HMAC_SECRET: only the test's
		name, _, _ := strings.Cut(kv, "=")
		if _, set := env[name]; set || hasAnyPrefix(name, "N8N_", "DB_", "EXECUTIONS_", "QUEUE_") {
			continue
		}
		i.env = append(i.env, kv)
	}
	base := map[string]string{
		"N8N_USER_FOLDER":                       user,
		"N8N_PORT":                              i.port,
		"N8N_LISTEN_ADDRESS":                    "127.0.0.1",
		"N8N_DIAGNOSTICS_ENABLED":               "false",
		"N8N_VERSION_NOTIFICATIONS_ENABLED":     "false",
		"N8N_TEMPLATES_ENABLED":                 "false",
		"N8N_PERSONALIZATION_ENABLED":           "false",
		"N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false",
	}
	for k, v := range base {
		i.env = append(i.env, k+"="+v)
	}
	for k, v := range env {
		i.env = append(i.env, k+"="+v)
	}
	return i
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// URL is where n8n listens once started (Base), known before Start.
func (i *Instance) URL() string { return "http://127.0.0.1:" + i.port }

// CLI runs `n8n args…` to its end (at most timeout) and returns its
// combined output; a non-zero exit is an error carrying that output.
func (i *Instance) CLI(t testing.TB, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{i.bin}, args...)...)
	cmd.Env = i.env
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("n8n %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), err
}

// Import copies files (relative to the repository root) into one folder and
// imports them with `n8n import:workflow --separate`.
func (i *Instance) Import(t testing.TB, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(RepoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := i.CLI(t, 3*time.Minute, "import:workflow", "--separate", "--input="+dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Start runs `n8n start` and waits until its editor is up and its active
// workflows are started; it is stopped when the test ends.
func (i *Instance) Start(t testing.TB) {
	t.Helper()
	i.Base = "http://127.0.0.1:" + i.port
	i.exited = make(chan struct{})
	i.cmd = exec.Command("node", i.bin, "start")
	i.cmd.Env = i.env
	i.cmd.Stdout, i.cmd.Stderr = i.Logs, i.Logs
	i.cmd.SysProcAttr = sysProcAttr()
	if err := i.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = i.cmd.Wait(); close(i.exited) }()
	t.Cleanup(func() { i.stop(t) })
	deadline := time.Now().Add(3 * time.Minute)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		if len(i.Logs.Lines("Editor is now accessible")) > 0 {
			if resp, err := client.Get(i.Base + "/healthz/readiness"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		select {
		case <-i.exited:
			t.Fatalf("n8n exited before it was ready:\n%s", i.Logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("n8n not ready after 3 min:\n%s", i.Logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (i *Instance) stop(t testing.TB) {
	select {
	case <-i.exited:
	default:
		_ = i.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-i.exited:
		case <-time.After(30 * time.Second):
			_ = i.cmd.Process.Kill()
			<-i.exited
		}
	}
	if t.Failed() {
		t.Logf("n8n logs:\n%s", i.Logs.String())
	}
}

// Execute runs the workflow id once from its Manual Trigger
// (`n8n execute --id`, beside the running n8n on the same database) and
// returns its output: the execution's run data as JSON after n8n's own
// start-up lines.
func (i *Instance) Execute(t testing.TB, id string) (string, error) {
	t.Helper()
	return i.CLI(t, 3*time.Minute, "execute", "--id="+id, "--rawOutput")
}
