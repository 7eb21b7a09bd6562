// Package sse writes Server-Sent Events from a Fiber handler. It is
// flowgate's one SSE writer (the work buffer's /api/buffer/events and the
// holds stream /v1/holds/stream): it sets the headers, frames events, keeps
// the connection alive with heartbeats so proxies keep it open and a
// vanished client is noticed, and stops when the client is gone (a failed
// write or flush) or the server shuts down.
//
// fasthttp sets one write deadline (the server's WriteTimeout) before it
// writes a response, and a streamed body is one response: a Writer moves
// that deadline forward before every write, so a stream lives as long as its
// owner wants, while a client that stops reading for WriteTimeout still ends
// it (the stalled write fails).
//
// fasthttp copies a streamed body from a pipe to the connection: a client
// that vanished is noticed when a write to the connection fails, and the
// Writer's next Flush fails after that. Streams therefore write something
// (a heartbeat) periodically.
package sse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Header values of every stream (seed 002 "SSE Stream Protocol").
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

// Writer writes one stream's events and flushes each, moving the client
// connection's write deadline forward before every write.
type Writer struct {
	w        *bufio.Writer
	conn     net.Conn // nil outside a server (tests on a buffer)
	timeout  time.Duration
	deadline time.Time
}

// NewWriter wraps w; conn (may be nil) is the client connection whose
// write deadline is moved forward by timeout (≤ 0: DefaultWriteTimeout).
func NewWriter(w *bufio.Writer, conn net.Conn, timeout time.Duration) *Writer {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	return &Writer{w: w, conn: conn, timeout: timeout}
}

// Send writes e and flushes.
func (w *Writer) Send(e Event) error {
	w.extend()
	if err := Write(w.w, e); err != nil {
		return w.failed(err)
	}
	return w.flush()
}

// Comment writes a comment line (": text") and flushes.
func (w *Writer) Comment(text string) error {
	w.extend()
	if _, err := w.w.WriteString(": " + oneLine(text) + "\n\n"); err != nil {
		return w.failed(err)
	}
	return w.flush()
}

// Retry announces the reconnect delay ("retry: ms") and flushes.
func (w *Writer) Retry(d time.Duration) error {
	w.extend()
	if _, err := fmt.Fprintf(w.w, "retry: %d\n\n", d.Milliseconds()); err != nil {
		return w.failed(err)
	}
	return w.flush()
}

func (w *Writer) flush() error {
	if err := w.w.Flush(); err != nil {
		return w.failed(err)
	}
	return nil
}

// extend moves the connection's write deadline to now + timeout.
func (w *Writer) extend() {
	w.deadline = time.Now().Add(w.timeout)
	if w.conn != nil {
		_ = w.conn.SetWriteDeadline(w.deadline)
	}
}

// failed wraps err; ErrStalled when the previous deadline had passed.
func (w *Writer) failed(err error) error {
	if !w.deadline.IsZero() && time.Now().After(w.deadline) {
		return fmt.Errorf("%w: %w", ErrStalled, err)
	}
	return fmt.Errorf("sse write: %w", err)
}

// SetHeaders sets the four stream headers of seed 002.
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
func Serve(c *fiber.Ctx, writeTimeout time.Duration, fn func(w *Writer)) {
	SetHeaders(c)
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		fn(NewWriter(bw, conn, writeTimeout))
	})
}

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

// Write frames one event (without flushing).
func Write(w *bufio.Writer, e Event) error {
	if e.ID != "" {
		fmt.Fprintf(w, "id: %s\n", oneLine(e.ID))
	}
	if e.Event != "" {
		fmt.Fprintf(w, "event: %s\n", oneLine(e.Event))
	}
	for _, line := range strings.Split(string(e.Data), "\n") {
		fmt.Fprintf(w, "data: %s\n", strings.TrimSuffix(line, "\r"))
	}
	_, err := w.WriteString("\n")
	return err
}

// oneLine keeps a field from breaking the framing.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
