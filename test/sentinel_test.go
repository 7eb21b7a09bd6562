package test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/rediscluster"
)

// startSentinel runs one redis-sentinel monitoring master as "mymaster".
func startSentinel(t *testing.T, master string) string {
	t.Helper()
	bin := os.Getenv("FLOWGATE_TEST_REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Skip("redis-server not installed: sentinel test skipped")
		}
	}
	host, port, _ := net.SplitHostPort(master)
	addr := freeAddr(t)
	_, sport, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\nsentinel down-after-milliseconds mymaster 2000\n", sport, dir, host, port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("redis-cli", "-p", sport, "sentinel", "get-master-addr-by-name", "mymaster").Output()
		if strings.Contains(string(out), port) {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel on %s never reported the master: %q", addr, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flowgate through Redis Sentinel: it finds the master, becomes ready and
// processes Asynq probe tasks.
func TestBinaryOnRedisSentinel(t *testing.T) {
	master := rediscluster.StartServer(t)
	sentinel := startSentinel(t, master.Addr())
	p := startFlowgate(t, withSecrets(map[string]string{
		"REDIS_SENTINEL_ADDRS":  sentinel,
		"REDIS_SENTINEL_MASTER": "mymaster",
	}))
	waitMetrics(t, p, `flowgate_asynq_probe_last_success_timestamp_seconds{queue="default"}`)

	// /readyz with the Sentinel-managed master unreachable (and no replica
	// to promote): 503 redis_unavailable within its 1 s budget — nothing
	// can be served until Sentinel names a master that answers —, then 200
	// again once it does, with no restart (docs/operations.md).
	resume := master.Pause()
	began := time.Now()
	status, body := p.Get("/readyz")
	took := time.Since(began)
	resume()
	t.Logf("master paused: /readyz %d %s in %s", status, body, took.Round(time.Millisecond))
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"redis_unavailable"`) || took > 1500*time.Millisecond {
		t.Fatalf("/readyz with the master paused: %d %s in %s; want 503 redis_unavailable within 1.5 s", status, body, took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if status, body = p.Get("/readyz"); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 within 10 s of the master's return: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, took := p.Stop(); code != 0 {
		t.Fatalf("exit %d after %s", code, took)
	}
}
