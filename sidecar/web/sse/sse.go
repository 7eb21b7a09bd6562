// Package sse writes Server-Sent Events from a Fiber handler. It is
// flowgate's one SSE writer (the work buffer's /api/buffer/events; meant
// for the holds stream too): it sets the headers, frames events, sends a
// comment heartbeat so proxies keep the connection open and a vanished
// client is noticed, and stops when the client is gone (a failed write or
// flush) or the server shuts down.
//
// fasthttp applies the server's WriteTimeout to the whole streamed body, so
// a stream ends after it; every stream announces a retry delay and event
// ids, and EventSource clients reconnect on their own.
package sse

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Event is one SSE event. Data may span lines.
type Event struct {
	ID    string
	Event string
	Data  []byte
}

// Options tune a stream. Zero values take the defaults.
type Options struct {
	Heartbeat time.Duration   // comment line interval; default 15s
	Retry     time.Duration   // reconnect delay announced to clients; default 1s
	Shutdown  context.Context // done when the server stops; default never
}

// Open starts the source of a stream: it returns the event channel and a
// stop function, or an error (answered before the stream starts). The
// context ends when the stream does. c is the request (read its query
// there; Fiber values are borrowed, so copy what the source keeps).
type Open func(ctx context.Context, c *fiber.Ctx) (<-chan Event, func(), error)

// Handler serves a stream from open.
func Handler(open Open, o Options) fiber.Handler {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
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
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderConnection, "keep-alive")
		c.Set("X-Accel-Buffering", "no")
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			defer cancel()
			defer stop()
			Stream(ctx, w, events, o)
		})
		return nil
	}
}

// Stream writes events to w until the channel closes, ctx ends, or a write
// fails (the client is gone). It is Handler's loop, usable on any writer.
func Stream(ctx context.Context, w *bufio.Writer, events <-chan Event, o Options) {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	fmt.Fprintf(w, "retry: %d\n: connected\n\n", o.Retry.Milliseconds())
	if w.Flush() != nil {
		return
	}
	beat := time.NewTicker(o.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if _, err := w.WriteString(": ping\n\n"); err != nil || w.Flush() != nil {
				return
			}
		case e, ok := <-events:
			if !ok {
				return
			}
			if Write(w, e) != nil || w.Flush() != nil {
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
