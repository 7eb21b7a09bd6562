// Package flowgatetest runs the real flowgate binary for end-to-end tests:
// it builds ./sidecar once per test process, starts it on a free port with
// the environment a test gives (no setting or secret of the test process's
// own environment leaks in: Env),
// waits for /readyz, captures its logs and stops it when the test ends.
package flowgatetest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/logtest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// BinaryEnv names a flowgate binary already built (by a parent test
// process that runs tests in a child, TestE2EOnRedisCluster): Binary uses it
// instead of building its own.
const BinaryEnv = "FLOWGATE_TEST_FLOWGATE_BIN"

// Binary builds ./sidecar once per test process and returns its path (or
// the binary BinaryEnv names, when it exists).
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if bin := os.Getenv(BinaryEnv); bin != "" {
			if _, err := os.Stat(bin); err == nil {
				binPath = bin
				return
			}
		}
		dir, err := os.MkdirTemp("", "flowgate-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "flowgate")
		cmd := exec.Command("go", "build", "-o", binPath, "./sidecar")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./sidecar: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// FreeAddr returns a loopback address nothing listens on right now, on a
// port below the kernel's ephemeral range: a port the kernel hands out for
// ":0" could be handed out again before the binary binds it (the binary's
// own simulator listening on ":0" once took it: "address already in use").
func FreeAddr(t testing.TB) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return ln.Addr().String()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// clusterScheme starts a ClusterURL.
const clusterScheme = "flowgatetest-cluster://"

// ClusterURL names a Redis Cluster (its seed addresses) and the REDIS_SHARDS
// a binary should run with, in the place of a REDIS_URL: a test helper that
// builds an environment from a Redis URL builds it for a cluster unchanged,
// and Start turns REDIS_URL=ClusterURL(…) into REDIS_CLUSTER_ADDRS and
// REDIS_SHARDS (an env that sets REDIS_SHARDS itself keeps its own).
func ClusterURL(addrs []string, shards int) string {
	return clusterScheme + strings.Join(addrs, ",") + "?shards=" + strconv.Itoa(shards)
}

// expandClusterURL rewrites env's REDIS_URL when it is a ClusterURL.
func expandClusterURL(env map[string]string) map[string]string {
	u, ok := env["REDIS_URL"]
	if !ok || !strings.HasPrefix(u, clusterScheme) {
		return env
	}
	addrs, shards, _ := strings.Cut(strings.TrimPrefix(u, clusterScheme), "?shards=")
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		if k != "REDIS_URL" {
			out[k] = v
		}
	}
	out["REDIS_CLUSTER_ADDRS"] = addrs
	if _, own := out["REDIS_SHARDS"]; !own && shards != "" {
		out["REDIS_SHARDS"] = shards
	}
	return out
}

// Proc is a running flowgate binary.
type Proc struct {
	Base    string // http://127.0.0.1:port
	Logs    *logtest.Buffer
	ReadyIn time.Duration // exec → first 200 from /readyz

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Env is the environment a child process of a test starts from: the test
// process's own variables reduced to the operating system's and Go's
// (Hermetic), so that only what a test passes decides the Redis, the
// Cloud9, the secrets and every other setting of a binary under test. A
// REDIS_URL, CLOUD9_* credentials or secrets left in the shell (README's
// Going live loads a whole .env into it) change no test's result.
func Env() []string { return Hermetic(os.Environ()) }

// hermeticNames and hermeticPrefixes are what Hermetic keeps: the
// variables a program needs to find its tools, home, temporary directory,
// locale and time zone, and the Go runtime's own (GOCOVERDIR, GORACE,
// GODEBUG, GOMAXPROCS, …). No flowgate setting has such a name.
var (
	hermeticNames    = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "TERM"}
	hermeticPrefixes = []string{"LC_", "GO"}
)

// Hermetic is environ (KEY=VALUE entries) with only the variables named in
// hermeticNames or starting with hermeticPrefixes: an allowlist, so that a
// setting added to flowgate tomorrow is left out too.
func Hermetic(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(hermeticNames, name) || slices.ContainsFunc(hermeticPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			out = append(out, kv)
		}
	}
	return out
}

// flowgateOwnPrefixes are the variables that configure flowgate or hold
// its secrets and that the Node-RED kit, the palette and the n8n workflows
// read too (FLOWGATE_URL, FLOWGATE_TOKEN, HMAC_SECRET, …).
var flowgateOwnPrefixes = []string{"FLOWGATE_", "REDIS_", "CLOUD9_", "HMAC_SECRET", "BOOKING_AUTH_SECRET",
	"BUFFER_API_TOKEN", "MONITORING_", "WEBHOOK_"}

// testOwnNames are FLOWGATE_* variables of the tests themselves (where the
// pinned Node-RED and n8n are installed), which WithoutFlowgate keeps, with
// FLOWGATE_TEST_*.
var testOwnNames = []string{"FLOWGATE_NODERED_DIR", "FLOWGATE_N8N_DIR"}

// WithoutFlowgate is environ without flowgate's settings and secrets and the
// FLOWGATE_* variables of its kits (the tests' own FLOWGATE_TEST_* and
// install directories are kept): the environment of a foreign program a
// test starts (Node-RED, n8n), which needs more of the test's environment
// than Env keeps (npm's and node's variables) but must not pick up a
// flowgate of the shell's.
func WithoutFlowgate(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		own := slices.ContainsFunc(flowgateOwnPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		if !own || strings.HasPrefix(name, "FLOWGATE_TEST_") || slices.Contains(testOwnNames, name) {
			out = append(out, kv)
		}
	}
	return out
}

// TestBufferToken is the BUFFER_API_TOKEN Start gives a binary whose env
// names none.
const TestBufferToken = "flowgatetest-buffer-token-0123456789"

// Start execs the binary with Env, then env (plus FLOWGATE_ADDR on a free
// port, LOG_FORMAT=json, unless env sets MONITORING_USER or MONITORING_AUTH,
// MONITORING_AUTH=none, unless env sets it, BUFFER_API_TOKEN =
// TestBufferToken, and on a real Redis without CLOUD9_ENDPOINT, unless env
// names CLOUD9_SIMULATOR (an empty value leaves it unset),
// CLOUD9_SIMULATOR=true) and waits until /readyz answers 200. A REDIS_URL
// made by ClusterURL becomes REDIS_CLUSTER_ADDRS and REDIS_SHARDS.
func Start(t testing.TB, env map[string]string) *Proc {
	t.Helper()
	env = expandClusterURL(env)
	bin := Binary(t)
	addr := FreeAddr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(Env(), "FLOWGATE_ADDR="+addr, "LOG_FORMAT=json")
	if env["MONITORING_USER"] == "" && env["MONITORING_AUTH"] == "" {
		// With a real Redis, /monitoring needs credentials unless opened on
		// purpose; tests that do not test it open it.
		cmd.Env = append(cmd.Env, "MONITORING_AUTH=none")
	}
	if env["BUFFER_API_TOKEN"] == "" {
		// With a real Redis the work buffer's API needs a token; tests that
		// do not use it get a fixed one.
		cmd.Env = append(cmd.Env, "BUFFER_API_TOKEN="+TestBufferToken)
	}
	if SimulatorDefault(env) {
		// A real Redis books into the sandbox simulator only when told to;
		// tests that do not test Cloud9 tell it.
		cmd.Env = append(cmd.Env, "CLOUD9_SIMULATOR=true")
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &Proc{Base: "http://" + addr, Logs: &logtest.Buffer{}, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Logs, p.Logs
	cmd.SysProcAttr = sysProcAttr()
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("flowgate logs:\n%s", p.Logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if status, _ := p.Get("/readyz"); status == http.StatusOK {
			p.ReadyIn = time.Since(started)
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("flowgate exited before ready: %v\n%s", p.waitErr, p.Logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("flowgate not ready after 20s\n%s", p.Logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SimulatorDefault reports whether Start adds CLOUD9_SIMULATOR=true to env:
// a real Redis (REDIS_URL, cluster or sentinel), no CLOUD9_ENDPOINT, and no
// CLOUD9_SIMULATOR of env's own.
func SimulatorDefault(env map[string]string) bool {
	_, own := env["CLOUD9_SIMULATOR"]
	real := env["REDIS_URL"] != "" || env["REDIS_CLUSTER_ADDRS"] != "" || env["REDIS_SENTINEL_ADDRS"] != ""
	return real && !own && env["CLOUD9_ENDPOINT"] == ""
}

// Addr is host:port.
func (p *Proc) Addr() string { return strings.TrimPrefix(p.Base, "http://") }

// PID is the process id (to read its memory in /proc).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has gone.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Get fetches path; a transport error gives status 0 and the error text.
func (p *Proc) Get(path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Stop sends SIGTERM and returns the exit code (-1 when it had to be
// killed after 30 s) and how long it took.
func (p *Proc) Stop() (int, time.Duration) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return -1, time.Since(start)
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(start)
}

// Kill sends SIGKILL (a crash) and waits for the process to go.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// LogLines returns the log lines containing s.
func (p *Proc) LogLines(s string) []string { return p.Logs.Lines(s) }
