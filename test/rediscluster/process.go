package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds every wait of this package (a process answering PING,
// the cluster agreeing on its slots). Generous: the tests of many packages
// run at once under -race on two cores.
const startTimeout = 20 * time.Second

// Port ranges. Client ports are drawn from [portLow, portHigh) and a cluster
// node's bus port is client port + busOffset, so both stay below Linux's
// ephemeral range (32768+) where outgoing connections take their ports.
const (
	portLow   = 12000
	portHigh  = 22000
	busOffset = 10000
)

// binaries finds redis-server (FLOWGATE_TEST_REDIS_SERVER, then PATH) and,
// when withCLI, redis-cli (beside redis-server, then PATH). It skips the test
// when one is missing.
func binaries(t testing.TB, withCLI bool) (server, cli string) {
	t.Helper()
	server = os.Getenv("FLOWGATE_TEST_REDIS_SERVER")
	if server == "" {
		server, _ = exec.LookPath("redis-server")
	} else if _, err := os.Stat(server); err != nil {
		server = ""
	}
	if server == "" {
		t.Skip("redis-server not installed: cluster tests skipped (set FLOWGATE_TEST_REDIS_SERVER or put redis-server on PATH; test/run installs it)")
	}
	if !withCLI {
		return server, ""
	}
	cli = filepath.Join(filepath.Dir(server), "redis-cli")
	if _, err := os.Stat(cli); err != nil {
		cli, _ = exec.LookPath("redis-cli")
	}
	if cli == "" {
		t.Skip("redis-cli not installed: cluster tests skipped (it comes with redis-server)")
	}
	return server, cli
}

// ports hands out ports at most once per test process, so tests running in
// parallel never race each other for the same one. Other processes are
// checked for by listening on the port.
var ports = struct {
	sync.Mutex
	taken map[int]bool
}{taken: map[int]bool{}}

// freePort returns a client port that is free now and, when withBus, whose
// bus port (port+busOffset) is free too.
func freePort(withBus bool) (int, error) {
	ports.Lock()
	defer ports.Unlock()
	for range 1000 {
		p := portLow + rand.IntN(portHigh-portLow)
		if ports.taken[p] || !canListen(p) || (withBus && !canListen(p+busOffset)) {
			continue
		}
		ports.taken[p] = true
		return p, nil
	}
	return 0, errors.New("rediscluster: no free port found")
}

func canListen(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// process is one running redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	name string        // for messages
	logs []string      // files holding its output
}

// startProcess starts bin with args, its stdout and stderr going to outFile.
//
// The process gets its own process group and, on Linux, SIGKILL when the
// test binary dies (a test timeout exits without running cleanups). The
// parent-death signal fires when the starting OS thread exits, so the
// goroutine that starts the process stays locked to its thread until the
// process has exited.
func startProcess(name, bin string, args []string, outFile string, logs ...string) (*process, error) {
	out, err := os.OpenFile(outFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	p := &process{cmd: cmd, done: make(chan struct{}), name: name, logs: append([]string{outFile}, logs...)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer out.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process group, waits up to grace, then kills it.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	if p.exited() {
		return
	}
	signalGroup(p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(startTimeout):
	}
}

// waitReady waits until the process answers PING on addr.
func (p *process) waitReady(addr string) error {
	c := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second,
		MaxRetries: -1, PoolSize: 1,
	})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	var err error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited during start%s", p.name, p.tail())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer PING within %s: %w%s", p.name, startTimeout, err, p.tail())
}

// tail is the end of the process's output files, for error messages.
func (p *process) tail() string {
	var b strings.Builder
	for _, f := range p.logs {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "\n--- %s ---\n%s", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

// addressInUse reports whether the process died because its port was taken
// (another process got it between our check and the bind).
func (p *process) addressInUse() bool {
	return p.exited() && strings.Contains(p.tail(), "Address already in use")
}
