//go:build linux

package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// runWire is Run on the wire client: every request is serialised before
// the clock starts (Build's output, byte for byte what fasthttp's client
// would send), the connections are raw sockets served by one epoll loop
// per Loops, and an answer is parsed only as far as Check needs (status
// line, Content-Length, body). The load generator shares the machine's
// two cores with the server it measures; fasthttp's client cost it
// ~27 µs of CPU per request (pool, header parsing, a goroutine wake-up
// per answer), this one a share of an epoll_wait, one read and one write.
func runWire(cfg Config) (Result, error) {
	reqs, err := serialise(cfg)
	if err != nil {
		return Result{}, err
	}
	loops := max(1, min(cfg.Loops, cfg.Conns))
	w := &wire{cfg: cfg, reqs: reqs, tally: newTally(cfg.Requests)}
	conns := make([][]*wireConn, loops)
	defer func() {
		for _, cs := range conns {
			for _, c := range cs {
				_ = syscall.Close(c.fd)
			}
		}
	}()
	for i := range cfg.Conns {
		c, err := dial(cfg.Addr)
		if err != nil {
			return Result{}, err
		}
		conns[i%loops] = append(conns[i%loops], c)
	}
	var wg sync.WaitGroup
	errs := make([]error, loops)
	start := time.Now()
	for l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[l] = w.loop(conns[l])
		}()
	}
	wg.Wait()
	return w.result(time.Since(start)), errors.Join(errs...)
}

// serialise renders every request once, in one arena.
func serialise(cfg Config) ([][]byte, error) {
	var arena bytes.Buffer
	ends := make([]int, cfg.Requests)
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	for i := range cfg.Requests {
		req.Reset()
		cfg.Build(i, req)
		if _, err := req.WriteTo(&arena); err != nil {
			return nil, fmt.Errorf("loadgen: render request %d: %w", i, err)
		}
		ends[i] = arena.Len()
	}
	all := arena.Bytes()
	out := make([][]byte, cfg.Requests)
	from := 0
	for i, e := range ends {
		out[i] = all[from:e:e]
		from = e
	}
	return out, nil
}

func dial(addr string) (*wireConn, error) {
	fd, err := DialFD(addr)
	if err != nil {
		return nil, err
	}
	return &wireConn{fd: fd, req: -1}, nil
}

// DialFD connects a blocking TCP socket to addr (IPv4 host:port) with
// TCP_NODELAY, for clients that serve their sockets with epoll themselves.
func DialFD(addr string) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return -1, fmt.Errorf("loadgen: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return -1, fmt.Errorf("loadgen: port %q: %w", port, err)
	}
	ip := net.ParseIP(host).To4()
	if ip == nil {
		return -1, fmt.Errorf("loadgen: not an IPv4 address: %s", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("loadgen: socket: %w", err)
	}
	sa := &syscall.SockaddrInet4{Port: p}
	copy(sa.Addr[:], ip)
	if err := syscall.Connect(fd, sa); err != nil {
		_ = syscall.Close(fd)
		return -1, fmt.Errorf("loadgen: connect %s: %w", addr, err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	return fd, nil
}

// wire is one run's shared state.
type wire struct {
	*tally
	cfg  Config
	reqs [][]byte
	next atomic.Int64
}

// wireConn is one connection; only its loop touches it. The socket stays
// blocking: it is read only when epoll reports it readable, and a write of
// one request to a loopback socket does not wait.
type wireConn struct {
	fd   int
	req  int // the request in flight, -1 none
	sent time.Time
	in   []byte // the answer read so far
}

// loop sends each connection's first request, then answers with the next
// request until every request was answered.
func (w *wire) loop(conns []*wireConn) error {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("loadgen: epoll_create1: %w", err)
	}
	defer syscall.Close(epfd)
	byFD := map[int32]*wireConn{}
	busy := 0
	for _, c := range conns {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			return fmt.Errorf("loadgen: epoll_ctl: %w", err)
		}
		byFD[int32(c.fd)] = c
		if ok, err := w.send(c); err != nil {
			return err
		} else if ok {
			busy++
		}
	}
	buf := make([]byte, 64<<10)
	evs := make([]syscall.EpollEvent, len(conns))
	resp := &fasthttp.Response{}
	for busy > 0 {
		n, err := syscall.EpollWait(epfd, evs, 30_000)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("loadgen: epoll_wait: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("loadgen: no answer on %d connections for 30 s", busy)
		}
		for _, ev := range evs[:n] {
			answered, err := w.read(byFD[ev.Fd], buf, resp)
			if err != nil {
				return err
			}
			if answered {
				busy--
				if ok, err := w.send(byFD[ev.Fd]); err != nil {
					return err
				} else if ok {
					busy++
				}
			}
		}
	}
	return nil
}

// read takes what c has and reports whether its answer is complete
// (then checked and recorded).
func (w *wire) read(c *wireConn, buf []byte, resp *fasthttp.Response) (bool, error) {
	k, err := syscall.Read(c.fd, buf)
	if k == 0 && err == nil {
		err = io.EOF
	}
	if err != nil {
		return false, fmt.Errorf("loadgen: connection closed with request %d in flight: %w", c.req, err)
	}
	in := buf[:k]
	if len(c.in) > 0 { // the start of this answer came earlier
		c.in = append(c.in, in...)
		in = c.in
	}
	status, body, used, err := parseAnswer(in)
	switch {
	case err != nil:
		return false, fmt.Errorf("loadgen: request %d: %w", c.req, err)
	case used == 0: // incomplete: keep it
		if len(c.in) == 0 {
			c.in = append(c.in, in...)
		}
		return false, nil
	case used != len(in):
		return false, fmt.Errorf("loadgen: %d bytes after the answer to request %d", len(in)-used, c.req)
	}
	w.done(c, status, body, resp)
	c.in = c.in[:0]
	return true, nil
}

// send writes the next request on c; false when none is left.
func (w *wire) send(c *wireConn) (bool, error) {
	i := int(w.next.Add(1) - 1)
	if i >= len(w.reqs) {
		c.req = -1
		return false, nil
	}
	c.req, c.sent = i, time.Now()
	for b := w.reqs[i]; len(b) > 0; {
		k, err := syscall.Write(c.fd, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("loadgen: write request %d: %w", i, err)
		}
		b = b[k:]
	}
	return true, nil
}

// done records c's answered request and checks it.
func (w *wire) done(c *wireConn, status int, body []byte, resp *fasthttp.Response) {
	w.lat[c.req] = time.Since(c.sent)
	if w.cfg.Check == nil {
		return
	}
	resp.Reset()
	resp.SetStatusCode(status)
	resp.SetBodyRaw(body)
	w.fail(w.cfg.Check(c.req, resp))
}

var (
	headEnd         = []byte("\r\n\r\n")
	contentLength   = []byte("\r\ncontent-length:")
	canonicalLength = []byte("\r\nContent-Length:")
)

// parseAnswer parses one HTTP/1.1 answer at the start of in: used is 0
// while it is incomplete. Only Content-Length bodies are understood (what
// fasthttp's server sends for a body set at once).
func parseAnswer(in []byte) (status int, body []byte, used int, err error) {
	h := bytes.Index(in, headEnd)
	if h < 0 {
		return 0, nil, 0, nil
	}
	head := in[:h+2]
	if len(head) < 12 || !bytes.HasPrefix(head, []byte("HTTP/1.")) {
		return 0, nil, 0, fmt.Errorf("not an HTTP answer: %q", head[:min(len(head), 40)])
	}
	status, err = strconv.Atoi(string(head[9:12]))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("status line %q: %w", head[:min(len(head), 40)], err)
	}
	cl := bytes.Index(head, canonicalLength) // fasthttp's spelling
	if cl < 0 {
		cl = indexFold(head, contentLength)
	}
	if cl < 0 {
		return 0, nil, 0, fmt.Errorf("answer %d without Content-Length", status)
	}
	v := head[cl+len(contentLength):]
	v = bytes.TrimLeft(v[:bytes.IndexByte(v, '\r')], " ")
	n, err := strconv.Atoi(string(v))
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	if err != nil {
		return 0, nil, 0, fmt.Errorf("Content-Length %q: %w", v, err)
	}
	start := h + len(headEnd)
	if len(in) < start+n {
		return 0, nil, 0, nil
	}
	return status, in[start : start+n], start + n, nil
}

// indexFold is bytes.Index for an ASCII lower-case needle, case-blind.
func indexFold(s, lower []byte) int {
	for i := 0; i+len(lower) <= len(s); i++ {
		if bytes.EqualFold(s[i:i+len(lower)], lower) {
			return i
		}
	}
	return -1
}

const wireSupported = true
