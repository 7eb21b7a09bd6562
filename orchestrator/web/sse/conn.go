package sse

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Conn is a hijacked client connection carrying one chunked SSE response,
// for streams that keep no goroutine of their own: whoever has an event
// for the client writes its frame with TryWrite, which makes one
// non-blocking write and never waits, and only a client whose socket buffer
// is full needs a goroutine (Flush) until it catches up.
//
// Writes must not overlap: the owner of a Conn serialises Start, TryWrite,
// Flush and Close (one writer at a time). Abort may be called at any time.
type Conn struct {
	nc      net.Conn
	raw     syscall.RawConn // nil when nc has no file descriptor (tests over a pipe)
	head    []byte          // the response head, in front of the first frame
	timeout time.Duration
	closed  chan struct{} // closed by Close
	once    sync.Once
	aborted atomic.Bool // Abort was called

	// tryWrite's arguments and results (writes are serialised, see above):
	// a method value made once, so a write allocates nothing.
	buf    []byte
	n      int
	errno  error
	rawFun func(fd uintptr) bool
}

// ErrWouldBlock: TryWrite could not write everything without waiting.
var ErrWouldBlock = errors.New("sse: client socket buffer full")

func newConn(nc net.Conn, head []byte, timeout time.Duration) *Conn {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	c := &Conn{nc: nc, head: head, timeout: timeout, closed: make(chan struct{})}
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
			c.rawFun = c.writeFd
		}
	}
	return c
}

// unwrap is the connection under fasthttp's hijack wrapper (its Read goes
// through the request's pooled reader, which the stream never uses).
func unwrap(nc net.Conn) net.Conn {
	if u, ok := nc.(interface{ UnsafeConn() net.Conn }); ok {
		return u.UnsafeConn()
	}
	return nc
}

// Hijackable reports whether fasthttp will hand c's connection to a
// hijack handler: not when the request asked to close the connection
// (Connection: close, HTTP/1.0 without keep-alive) — fasthttp then closes
// it without running the handler, so a stream must be refused up front.
func Hijackable(c *fiber.Ctx) bool {
	return !c.Request().Header.ConnectionClose() && c.Request().Header.IsHTTP11()
}

// Detach answers c with a stream and runs fn with its Conn once the
// connection is hijacked, on fasthttp's hijack goroutine. After fn returns
// the connection stays open until the Conn is closed: the caller owns it and
// must Close it on every path. With the server's KeepHijackedConns set the
// hijack goroutine (and fasthttp's request context and read buffer) is gone
// once fn returns; without it the goroutine waits for Close, so fasthttp
// does not close the connection under the stream.
func Detach(c *fiber.Ctx, writeTimeout time.Duration, fn func(conn *Conn)) {
	SetHeaders(c)
	c.Response().Header.SetContentLength(-1) // Transfer-Encoding: chunked
	head := append([]byte(nil), c.Response().Header.Header()...)
	keep := c.App().Server() != nil && c.App().Server().KeepHijackedConns
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(nc net.Conn) {
		conn := newConn(unwrap(nc), head, writeTimeout)
		fn(conn)
		if !keep {
			<-conn.closed
		}
	})
}

// Start writes the response head, if no frame carried it yet (blocking, within
// the write timeout).
func (c *Conn) Start() error {
	return c.Flush(nil)
}

// TryWrite writes frame (chunk-framed, see AppendChunk) with one
// non-blocking write and returns how much of it was written: all, or less
// with ErrWouldBlock (the client's socket buffer is full; the rest is the
// caller's to queue and Flush), or an error (the client is gone). Before the
// head was written (Start) it writes nothing and answers ErrWouldBlock.
func (c *Conn) TryWrite(frame []byte) (int, error) {
	if c.head != nil {
		return 0, ErrWouldBlock
	}
	if c.raw == nil { // no descriptor: an ordinary (blocking) write
		return c.nc.Write(frame)
	}
	c.buf, c.n, c.errno = frame, 0, nil
	if err := c.raw.Write(c.rawFun); err != nil {
		return 0, fmt.Errorf("sse write: %w", err)
	}
	n, err := c.n, c.errno
	c.buf = nil
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return n, ErrWouldBlock
	case err != nil:
		return n, fmt.Errorf("sse write: %w", os.NewSyscallError("write", err))
	case n < len(frame):
		return n, ErrWouldBlock
	}
	return n, nil
}

// writeFd is one write(2) of c.buf, retried only when interrupted; it
// never asks the poller to wait (always true).
func (c *Conn) writeFd(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), c.buf)
		if err == syscall.EINTR {
			continue
		}
		if n > 0 {
			c.n = n
		}
		c.errno = err
		return true
	}
}

// Flush writes frames (chunk-framed) and waits until they are written, the
// head first if it was not: a stalled client fails it after the write
// timeout with ErrStalled; Abort fails it at once.
func (c *Conn) Flush(frames []byte) error {
	if c.head == nil && len(frames) == 0 {
		return nil
	}
	deadline := time.Now().Add(c.timeout)
	_ = c.nc.SetWriteDeadline(deadline)
	if c.aborted.Load() { // after the deadline moved: an Abort before it is seen here, one after it wins
		return fmt.Errorf("%w: aborted", ErrStalled)
	}
	bufs := net.Buffers{c.head, frames}
	c.head = nil
	if _, err := bufs.WriteTo(c.nc); err != nil {
		if !time.Now().Before(deadline) || errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrStalled, err)
		}
		return fmt.Errorf("sse write: %w", err)
	}
	// No deadline between writes: TryWrite's raw write would fail on a
	// passed one (and it never waits, so it needs none).
	_ = c.nc.SetWriteDeadline(time.Time{})
	if c.aborted.Load() {
		c.Abort()
	}
	return nil
}

// Abort makes a Flush in progress (and every later one) fail at once with
// ErrStalled: the stream gives up on a client that does not read.
func (c *Conn) Abort() {
	c.aborted.Store(true)
	_ = c.nc.SetWriteDeadline(time.Unix(1, 0))
}

// Close ends the response with tail (frames, best effort, without waiting)
// and the last chunk, then closes the connection. Later calls do nothing.
func (c *Conn) Close(tail []byte) {
	c.once.Do(func() {
		if c.head == nil && !c.aborted.Load() {
			b := make([]byte, 0, len(tail)+len(lastChunk))
			_, _ = c.TryWrite(append(append(b, tail...), lastChunk...))
		}
		_ = c.nc.Close()
		close(c.closed)
	})
}

// AppendChunk appends e as one HTTP chunk (size line, SSE frame, CRLF) to
// dst: the unit TryWrite and Flush take.
func AppendChunk(dst []byte, e Event) []byte {
	bp := frames.Get().(*[]byte)
	frame := appendEvent((*bp)[:0], e)
	dst = appendChunkOf(dst, frame)
	if cap(frame) <= 64<<10 {
		*bp = frame[:0]
		frames.Put(bp)
	}
	return dst
}
