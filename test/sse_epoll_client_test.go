//go:build linux

package test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/loadgen"
)

// epollStreams reads many SSE streams from raw non-blocking sockets on a
// few epoll loops (one goroutine each, streams spread over them by file
// descriptor) instead of one goroutine with a buffered reader per stream.
// The load test measures the server's delivery, and its clients share the
// machine's two cores with it: a goroutine per stream cost the clients
// 12–16 µs of CPU per delivered event (scheduler wake-up, read, parse),
// time the server's last streams then waited for. Here a delivery costs a
// share of one epoll_wait and one read.
type epollStreams struct {
	epfds     []int
	states    []atomic.Pointer[epollStream] // by fd
	lat       *sseLatencies
	connected chan<- error
	mu        sync.Mutex
	fds       []int
	closed    atomic.Bool
	done      sync.WaitGroup
}

// epollStream is one stream's unparsed tail; only its loop touches it.
type epollStream struct {
	carry     []byte
	connected bool
}

// newEpollStreams starts loops epoll loops for at most maxFD descriptors;
// every stream reports on connected once (nil when "connected" arrived).
func newEpollStreams(loops, maxFD int, lat *sseLatencies, connected chan<- error) (*epollStreams, error) {
	e := &epollStreams{states: make([]atomic.Pointer[epollStream], maxFD+1), lat: lat, connected: connected}
	for range loops {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("epoll_create1: %w", err)
		}
		e.epfds = append(e.epfds, fd)
	}
	for _, epfd := range e.epfds {
		e.done.Add(1)
		go e.loop(epfd)
	}
	return e, nil
}

// Open connects to addr (host:port, IPv4), sends the stream request for
// query and hands the socket to a loop.
func (e *epollStreams) Open(addr, query string) error {
	fd, err := loadgen.DialFD(addr)
	if err != nil {
		return err
	}
	if fd >= len(e.states) {
		syscall.Close(fd)
		return fmt.Errorf("fd %d over the limit %d", fd, len(e.states)-1)
	}
	req := []byte("GET /v1/holds/stream?" + query + " HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
	for len(req) > 0 {
		n, err := syscall.Write(fd, req)
		if err != nil {
			syscall.Close(fd)
			return fmt.Errorf("write: %w", err)
		}
		req = req[n:]
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return err
	}
	e.states[fd].Store(&epollStream{})
	e.mu.Lock()
	e.fds = append(e.fds, fd)
	e.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(e.epfds[fd%len(e.epfds)], syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

func (e *epollStreams) loop(epfd int) {
	defer e.done.Done()
	buf := make([]byte, 64<<10)
	evs := make([]syscall.EpollEvent, 512)
	for !e.closed.Load() {
		n, err := syscall.EpollWait(epfd, evs, 50)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range evs[:n] {
			e.drain(epfd, int(ev.Fd), buf)
		}
	}
}

// drain reads what fd has (level-triggered: what is left is reported
// again) and parses it.
func (e *epollStreams) drain(epfd, fd int, buf []byte) {
	st := e.states[fd].Load()
	if st == nil {
		return
	}
	n, err := syscall.Read(fd, buf)
	if errors.Is(err, syscall.EAGAIN) {
		return
	}
	if n <= 0 || err != nil {
		_ = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, fd, nil)
		e.states[fd].Store(nil)
		if !st.connected {
			if err == nil {
				err = io.EOF
			}
			e.connected <- fmt.Errorf("stream closed before connected: %w", err)
		}
		return
	}
	e.parse(st, buf[:n])
}

// parse handles every complete line of the stream's tail plus data.
func (e *epollStreams) parse(st *epollStream, data []byte) {
	if len(st.carry) > 0 {
		data = append(st.carry, data...)
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		e.line(st, data[:i])
		data = data[i+1:]
	}
	st.carry = append(st.carry[:0], data...)
}

func (e *epollStreams) line(st *epollStream, line []byte) {
	if i := bytes.Index(line, pubTimeKey); i >= 0 && bytes.Contains(line, holdTypeKey) {
		var ns int64
		for _, c := range line[i+len(pubTimeKey):] {
			if c < '0' || c > '9' {
				break
			}
			ns = ns*10 + int64(c-'0')
		}
		e.lat.add(time.Since(time.Unix(0, ns)))
	} else if !st.connected && bytes.Contains(line, connectedKey) {
		st.connected = true
		e.connected <- nil
	}
}

// Close stops the loops and closes every stream.
func (e *epollStreams) Close() {
	e.closed.Store(true)
	e.done.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, fd := range e.fds {
		_ = syscall.Close(fd)
	}
	for _, fd := range e.epfds {
		_ = syscall.Close(fd)
	}
}

// awaitConnected waits for n streams' reports: a refused stream (an error
// answer on a kept-alive connection never closes) fails the test after a
// minute instead of hanging it.
func awaitConnected(t *testing.T, connected <-chan error, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for i := range n {
		select {
		case err := <-connected:
			require.NoError(t, err)
		case <-deadline:
			t.Fatalf("only %d of %d streams connected within a minute", i, n)
		}
	}
}

// deliveries is one delivery measurement: n streams opened to addr (the
// request of stream i for query(i)) on epoll clients, measure run once all
// are connected, then events published gap apart by publish (given the
// publish time in ns, the event's specialistId: its holdId is a public
// reference the stream computes) and every delivery's latency.
type deliveries struct {
	addr    string
	n       int
	query   func(i int) string
	measure func() // may be nil
	events  int
	gap     time.Duration
	publish func(ns int64) error
	onShort func() // logs what explains missing deliveries; may be nil
}

// run measures d and returns the sorted latencies and the function that
// closes the streams (they stay open until then).
func (d deliveries) run(t *testing.T) ([]time.Duration, func()) {
	t.Helper()
	connected := make(chan error, d.n)
	lat := &sseLatencies{}
	streams, err := newEpollStreams(2, d.n+65536, lat, connected)
	require.NoError(t, err)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	start := time.Now()
	for i := range d.n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := streams.Open(d.addr, d.query(i)); err != nil {
				connected <- err
			}
		}()
	}
	wg.Wait()
	awaitConnected(t, connected, d.n)
	t.Logf("%d streams connected in %s", d.n, time.Since(start).Round(time.Millisecond))
	if d.measure != nil {
		d.measure()
	}
	for range d.events {
		require.NoError(t, d.publish(time.Now().UnixNano()))
		time.Sleep(d.gap)
	}
	deadline := time.Now().Add(60 * time.Second)
	for lat.n.Load() < int64(d.n*d.events) {
		if time.Now().After(deadline) {
			if d.onShort != nil {
				d.onShort()
			}
			t.Fatalf("only %d of %d deliveries within 60s", lat.n.Load(), d.n*d.events)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return lat.sorted(), streams.Close
}
