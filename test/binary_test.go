package test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the flowgate binary built once for this package's tests.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func flowgateBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flowgate-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "flowgate")
		cmd := exec.Command("go", "build", "-o", binPath, "./sidecar")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./sidecar: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a running flowgate binary.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	base    string
	logs    *lockedBuffer
	exited  chan struct{}
	waitErr error
	started time.Time
	ReadyIn time.Duration // exec → /readyz 200
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startFlowgate execs the binary with env (plus FLOWGATE_ADDR on a free
// port) and waits until /readyz answers 200.
func startFlowgate(t *testing.T, env map[string]string) *proc {
	t.Helper()
	bin := flowgateBinary(t)
	addr := freeAddr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "FLOWGATE_ADDR="+addr, "LOG_FORMAT=json")
	// The test process may carry REDIS_URL for redistest: only what env
	// says reaches flowgate.
	cmd.Env = filterEnv(cmd.Env, "REDIS_URL", "REDIS_CLUSTER_ADDRS", "REDIS_SENTINEL_ADDRS", "REDIS_SENTINEL_MASTER")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &proc{t: t, cmd: cmd, base: "http://" + addr, logs: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	p.started = time.Now()
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
			t.Logf("flowgate logs:\n%s", p.logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if status, _ := p.get("/readyz"); status == 200 {
			p.ReadyIn = time.Since(p.started)
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("flowgate exited before ready: %v\n%s", p.waitErr, p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("flowgate not ready after 20s\n%s", p.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func filterEnv(env []string, drop ...string) []string {
	out := env[:0]
next:
	for _, kv := range env {
		for _, d := range drop {
			if strings.HasPrefix(kv, d+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

func (p *proc) get(path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// stop sends SIGTERM and returns the exit code and how long it took.
func (p *proc) stop() (int, time.Duration) {
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

// kill sends SIGKILL (a crash) and waits for the process to go.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// logLines returns the JSON log lines containing s.
func (p *proc) logLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(p.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			out = append(out, sc.Text())
		}
	}
	return out
}
