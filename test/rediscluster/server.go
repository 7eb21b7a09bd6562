package rediscluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a throwaway redis-server of one test, for tests that stop,
// crash and restart Redis. Its port stays the same across Stop/Kill and
// Start, so clients configured with Addr reconnect to the new process.
//
// Start, Stop, Kill and Restart report failures with t.Fatalf: call them
// from the test's goroutine (elsewhere the failure is still recorded, but
// only that goroutine stops).
type Server struct {
	t       testing.TB
	bin     string
	dir     string
	port    int
	persist bool
	extra   []string

	mu   sync.Mutex
	proc *process
}

// ServerOption configures StartServer.
type ServerOption func(*Server)

// WithPersistence turns on the append-only file with fsync on every write,
// so the data set survives Stop, Kill and Restart (a crash loses nothing
// that was acknowledged). Without it the server keeps nothing on disk and
// every start is empty.
func WithPersistence() ServerOption { return func(s *Server) { s.persist = true } }

// WithArgs adds redis-server arguments (e.g. "--maxmemory", "10mb") to every
// start. They come after this package's own, so they win.
func WithArgs(args ...string) ServerOption {
	return func(s *Server) { s.extra = append(s.extra, args...) }
}

// StartServer starts a redis-server on a free port with a temporary dir and
// registers a cleanup that kills it and removes the dir, whatever the test's
// outcome. The test is skipped when redis-server is not installed.
func StartServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	bin, _ := binaries(t, false)
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.proc != nil {
			s.proc.stop(syscall.SIGKILL, 0)
		}
	})
	began := time.Now()
	var lastErr error
	for range 5 {
		port, err := freePort(false)
		if err != nil {
			t.Fatal(err)
		}
		s.port = port
		lastErr = s.start()
		if lastErr == nil {
			t.Logf("rediscluster: redis-server on %s ready in %s", s.Addr(), time.Since(began).Round(time.Millisecond))
			return s
		}
		if s.proc == nil || !s.proc.addressInUse() {
			break
		}
		s.proc = nil // port taken by another process: try another one
	}
	t.Fatalf("rediscluster: %v", lastErr)
	return nil
}

// Addr is host:port, the same for the server's whole life.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is redis://Addr/0, for REDIS_URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Running reports whether the redis-server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// Start starts the server again on the same port after Stop or Kill, and
// waits until it answers PING. Starting a running server fails the test.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		s.t.Fatalf("rediscluster: Start: server on %s is already running", s.Addr())
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("rediscluster: Start: %v", err)
	}
}

// Stop shuts the server down with SIGTERM (as `redis-cli shutdown` would:
// clients are closed, the append-only file is flushed) and waits for it to
// exit. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.halt(syscall.SIGTERM, 10*time.Second) }

// Kill kills the server with SIGKILL, like a crash or an OOM kill, and
// waits for it to exit. Killing a stopped server does nothing.
func (s *Server) Kill() { s.halt(syscall.SIGKILL, 0) }

// Pause stops the server with SIGSTOP: connections stay open and every
// call hangs, the failure no dial error reveals. It resumes (SIGCONT) when
// resume is called or the test ends.
func (s *Server) Pause() (resume func()) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		s.t.Fatalf("rediscluster: Pause: server on %s is not running", s.Addr())
	}
	p := s.proc.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("rediscluster: Pause: %v", err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = p.Signal(syscall.SIGCONT) }) }
	s.t.Cleanup(resume)
	return resume
}

// Restart is Stop then Start.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

func (s *Server) halt(sig syscall.Signal, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop(sig, grace)
	}
}

// start runs redis-server on s.port; the caller holds s.mu or owns s.
func (s *Server) start() error {
	appendonly := "no"
	if s.persist {
		appendonly = "yes"
	}
	name := "redis-" + strconv.Itoa(s.port)
	logFile := filepath.Join(s.dir, name+".log")
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--daemonize", "no", "--dir", s.dir, "--logfile", logFile,
		"--save", "", "--appendonly", appendonly, "--appendfsync", "always",
	}
	args = append(args, s.extra...)
	p, err := startProcess(fmt.Sprintf("redis-server :%d", s.port), s.bin, args, filepath.Join(s.dir, name+".out"), logFile)
	if err != nil {
		return err
	}
	s.proc = p
	if err := p.waitReady(s.Addr()); err != nil {
		p.stop(syscall.SIGKILL, 0)
		return err
	}
	return nil
}
