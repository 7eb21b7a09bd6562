// Package sse writes Server-Sent Events from a Fiber handler. It is
// flowgate's one SSE writer (the work buffer's /api/buffer/events and the
// holds stream /v1/holds/stream): it sets the headers, frames events, keeps
// the connection alive with heartbeats so proxies keep it open and a
// vanished client is noticed, and stops when the client is gone (a failed
// write or flush) or the server shuts down.
//
// Serve runs a stream on a goroutine of its own with a Writer; Detach
// hands the connection to an owner that keeps no goroutine for it (a Conn:
// one non-blocking write per frame, a blocking Flush only for a client that
// fell behind). Either way a blocking write gets the write deadline, so a
// stream lives as long as its owner wants (not the server's WriteTimeout),
// while a client that stops reading for WriteTimeout still ends it (the
// stalled write fails).
//
// A client that vanished is noticed only when a write to its connection
// fails: streams therefore write something (a heartbeat) periodically.
package sse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

// Header values of every stream (docs/holds.md#the-live-stream-sse).
const (
	ContentType  = "text/event-stream; charset=utf-8"
	CacheControl = "no-cache, no-transform"
)

// DefaultWriteTimeout is how long one write may stall before the stream ends.
const DefaultWriteTimeout = 30 * time.Second

// Event is one SSE event. Data may span lines.
type Event struct {
	ID    string
	Event string
	Data  []byte
}

// Options tune a stream. Zero values take the defaults.
type Options struct {
	Heartbeat    time.Duration   // comment line interval; default 15s
	Retry        time.Duration   // reconnect delay announced to clients; default 1s
	Shutdown     context.Context // done when the server stops; default never
	WriteTimeout time.Duration   // a write stalled this long ends the stream; default DefaultWriteTimeout
}

// ErrStalled is returned by a Writer whose failed write came after its
// deadline had passed: the client was connected but did not read.
var ErrStalled = errors.New("sse: client stopped reading")

// Writer writes one stream's events, each as one write of a frame built in
// a pooled buffer (an idle stream holds no buffer), moving the client
// connection's write deadline forward before every write.
type Writer struct {
	out      io.Writer
	conn     net.Conn // nil outside a server (tests on a buffer)
	timeout  time.Duration
	deadline time.Time
	failed   bool
}

// NewWriter writes frames to out; conn (may be nil) is the client
// connection whose write deadline is moved forward by timeout (≤ 0:
// DefaultWriteTimeout).
func NewWriter(out io.Writer, conn net.Conn, timeout time.Duration) *Writer {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	return &Writer{out: out, conn: conn, timeout: timeout}
}

// frames are the pooled frame buffers (events are a few hundred bytes).
var frames = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// emit builds a frame with build and writes it.
func (w *Writer) emit(build func([]byte) []byte) error {
	bp := frames.Get().(*[]byte)
	b := build((*bp)[:0])
	w.extend()
	_, err := w.out.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		frames.Put(bp)
	}
	if err != nil {
		w.failed = true
		if time.Now().After(w.deadline) {
			return fmt.Errorf("%w: %w", ErrStalled, err)
		}
		return fmt.Errorf("sse write: %w", err)
	}
	return nil
}

// extend moves the write deadline to now + timeout once less than half of
// it is left (not on every write: a deadline change costs a timer update).
func (w *Writer) extend() {
	now := time.Now()
	if w.deadline.Sub(now) > w.timeout/2 {
		return
	}
	w.deadline = now.Add(w.timeout)
	if w.conn != nil {
		_ = w.conn.SetWriteDeadline(w.deadline)
	}
}

// Send writes e.
func (w *Writer) Send(e Event) error {
	return w.emit(func(b []byte) []byte { return appendEvent(b, e) })
}

// Comment writes a comment line (": text").
func (w *Writer) Comment(text string) error {
	return w.emit(func(b []byte) []byte {
		return append(append(append(b, ": "...), oneLine(text)...), "\n\n"...)
	})
}

// Retry announces the reconnect delay ("retry: ms").
func (w *Writer) Retry(d time.Duration) error {
	return w.emit(func(b []byte) []byte { return appendRetry(b, d) })
}

func appendRetry(b []byte, d time.Duration) []byte {
	return append(strconv.AppendInt(append(b, "retry: "...), d.Milliseconds(), 10), "\n\n"...)
}

// AppendRetry appends the reconnect delay ("retry: ms") as one HTTP chunk
// (see AppendChunk).
func AppendRetry(dst []byte, d time.Duration) []byte {
	var b [32]byte
	return appendChunkOf(dst, appendRetry(b[:0], d))
}

// SetHeaders sets the four stream headers of docs/holds.md#the-live-stream-sse.
func SetHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, ContentType)
	c.Set(fiber.HeaderCacheControl, CacheControl)
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no")
}

// Serve answers c with a stream: it sets the headers and runs fn with the
// stream's Writer once the response starts; the stream ends when fn
// returns. fn runs on its own goroutine after the handler returned, so it
// must not touch c (copy what it needs first).
//
// The connection is hijacked from fasthttp (see Detach): the stream writes
// the response head (with the headers the middleware set) and chunked
// frames straight to the socket. A streamed fasthttp body would cost a
// pipe, a copying goroutine and 4 KB buffers per stream instead, and notice
// a vanished client one write later. The connection closes when fn returns;
// fasthttp's Shutdown does not wait for hijacked connections, so whoever
// owns long streams ends them first (holdstream's Hub.Shutdown).
func Serve(c *fiber.Ctx, writeTimeout time.Duration, fn func(w *Writer)) {
	Detach(c, writeTimeout, func(conn *Conn) {
		w := NewWriter(chunked{conn}, nil, writeTimeout)
		defer func() {
			if w.failed {
				conn.Close(nil)
				return
			}
			_ = conn.Start() // the head, if nothing was written
			conn.Close(nil)
		}()
		fn(w)
	})
}

// chunked writes each Write as one HTTP/1.1 chunk to conn (the response
// head in front of the first), waiting until it is written.
type chunked struct{ conn *Conn }

func (c chunked) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	bp := frames.Get().(*[]byte)
	b := appendChunkOf((*bp)[:0], p)
	err := c.conn.Flush(b)
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		frames.Put(bp)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// appendChunkOf appends p as one HTTP chunk.
func appendChunkOf(dst, p []byte) []byte {
	dst = strconv.AppendInt(dst, int64(len(p)), 16)
	return append(append(append(dst, crlf...), p...), crlf...)
}

var (
	crlf      = []byte("\r\n")
	lastChunk = []byte("0\r\n\r\n")
)

// Open starts the source of a stream: it returns the event channel and a
// stop function, or an error (answered before the stream starts). The
// context ends when the stream does. c is the request (read its query
// there; Fiber values are borrowed, so copy what the source keeps).
type Open func(ctx context.Context, c *fiber.Ctx) (<-chan Event, func(), error)

// Handler serves a stream from open.
func Handler(open Open, o Options) fiber.Handler {
	if o.Shutdown == nil {
		o.Shutdown = context.Background()
	}
	return func(c *fiber.Ctx) error {
		if !Hijackable(c) { // fasthttp would never run the stream: open's source would leak
			e := contracts.Errorf(contracts.CodeInvalid, "a stream needs a keep-alive HTTP/1.1 connection (no Connection: close)")
			e.Details = map[string]any{"field": "Connection"}
			return e
		}
		ctx, cancel := context.WithCancel(o.Shutdown)
		events, stop, err := open(ctx, c)
		if err != nil {
			cancel()
			return err
		}
		Serve(c, o.WriteTimeout, func(w *Writer) {
			defer cancel()
			defer stop()
			Stream(ctx, w, events, o)
		})
		return nil
	}
}

// Stream writes events to w until the channel closes, ctx ends, or a write
// fails (the client is gone). It is Handler's loop, usable on any Writer.
func Stream(ctx context.Context, w *Writer, events <-chan Event, o Options) {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	if w.Retry(o.Retry) != nil || w.Comment("connected") != nil {
		return
	}
	beat := time.NewTicker(o.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if w.Comment("ping") != nil {
				return
			}
		case e, ok := <-events:
			if !ok || w.Send(e) != nil {
				return
			}
		}
	}
}

// Write frames one event onto w (without flushing).
func Write(w *bufio.Writer, e Event) error {
	_, err := w.Write(appendEvent(nil, e))
	return err
}

// appendEvent appends e's frame to b.
func appendEvent(b []byte, e Event) []byte {
	if e.ID != "" {
		b = append(append(append(b, "id: "...), oneLine(e.ID)...), '\n')
	}
	if e.Event != "" {
		b = append(append(append(b, "event: "...), oneLine(e.Event)...), '\n')
	}
	data := e.Data
	for {
		line, rest, more := bytes.Cut(data, []byte("\n"))
		b = append(append(append(b, "data: "...), bytes.TrimSuffix(line, []byte("\r"))...), '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(b, '\n')
}

// oneLine keeps a field from breaking the framing.
func oneLine(s string) string { return newlines.Replace(s) }

var newlines = strings.NewReplacer("\r", " ", "\n", " ")
