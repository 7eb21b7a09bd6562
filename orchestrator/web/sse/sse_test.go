package sse_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

func TestWriteFramesMultilineAndStripsNewlinesFromFields(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	require.NoError(t, sse.Write(w, sse.Event{ID: "1\n2", Event: "done\r\nx", Data: []byte("a\nb\r\nc")}))
	require.NoError(t, w.Flush())
	require.Equal(t, "id: 1 2\nevent: done  x\ndata: a\ndata: b\ndata: c\n\n", buf.String())
}

// TestHandlerStreamsAndNoticesVanishedClient runs a real server: events
// arrive in order, and a client that hangs up ends the source (stop runs)
// at the next heartbeat.
func TestHandlerStreamsAndNoticesVanishedClient(t *testing.T) {
	events := make(chan sse.Event, 4)
	stopped := make(chan struct{})
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/s", sse.Handler(func(ctx context.Context, c *fiber.Ctx) (<-chan sse.Event, func(), error) {
		if c.Query("fail") != "" {
			return nil, nil, fiber.NewError(503, "no source")
		}
		return events, func() { close(stopped) }, nil
	}, sse.Options{Heartbeat: 30 * time.Millisecond, Retry: 500 * time.Millisecond}))
	ln := listen(t, app)

	resp, err := http.Get("http://" + ln.Addr().String() + "/s?fail=1")
	require.NoError(t, err)
	require.Equal(t, 503, resp.StatusCode)
	resp.Body.Close()

	resp, err = http.Get("http://" + ln.Addr().String() + "/s")
	require.NoError(t, err)
	require.Equal(t, sse.ContentType, resp.Header.Get("Content-Type"))
	require.Equal(t, sse.CacheControl, resp.Header.Get("Cache-Control"))
	require.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	r := bufio.NewReader(resp.Body)
	events <- sse.Event{ID: "m1", Event: "completed", Data: []byte(`{"n":1}`)}
	var got []string
	for len(got) < 3 || got[len(got)-1] != `data: {"n":1}` {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if line = strings.TrimRight(line, "\n"); line != "" && !strings.HasPrefix(line, ":") {
			got = append(got, line)
		}
	}
	require.Equal(t, []string{"retry: 500", "id: m1", "event: completed", `data: {"n":1}`}, got)
	require.NoError(t, resp.Body.Close())
	select {
	case <-stopped:
	case <-time.After(3 * time.Second):
		t.Fatal("the source was not stopped after the client hung up")
	}
	_, err = io.ReadAll(resp.Body)
	require.True(t, err == nil || errors.Is(err, http.ErrBodyReadAfterClose) || strings.Contains(err.Error(), "closed"))
}

// TestStreamOutlivesServerWriteTimeout: fasthttp's WriteTimeout is one
// deadline for a whole response; the Writer moves it forward on every
// write, so a stream goes on past it.
func TestStreamOutlivesServerWriteTimeout(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true, WriteTimeout: 200 * time.Millisecond})
	app.Get("/s", sse.Handler(func(ctx context.Context, c *fiber.Ctx) (<-chan sse.Event, func(), error) {
		return make(chan sse.Event), func() {}, nil
	}, sse.Options{Heartbeat: 40 * time.Millisecond, WriteTimeout: 200 * time.Millisecond}))
	ln := listen(t, app)

	resp, err := http.Get("http://" + ln.Addr().String() + "/s")
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	start := time.Now()
	pings := 0
	for time.Since(start) < time.Second {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "the stream ended after %s, %d pings", time.Since(start), pings)
		if line == ": ping\n" {
			pings++
		}
	}
	require.GreaterOrEqual(t, pings, 5)
}

// TestHandlerRefusesConnectionClose: fasthttp never hands over a
// Connection: close (or HTTP/1.0) connection, so the stream would never
// run and its source never stop: 400 naming Connection, the source not
// opened.
func TestHandlerRefusesConnectionClose(t *testing.T) {
	opened := 0
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: func(c *fiber.Ctx, err error) error {
		var ce *contracts.Error
		if errors.As(err, &ce) {
			return c.Status(400).JSON(fiber.Map{"code": ce.Code, "details": ce.Details})
		}
		return fiber.DefaultErrorHandler(c, err)
	}})
	app.Get("/s", sse.Handler(func(ctx context.Context, c *fiber.Ctx) (<-chan sse.Event, func(), error) {
		opened++
		return make(chan sse.Event), func() {}, nil
	}, sse.Options{}))
	ln := listen(t, app)
	for _, head := range []string{"GET /s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /s HTTP/1.0\r\nHost: x\r\n\r\n"} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = io.WriteString(conn, head)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		answer, err := io.ReadAll(conn) // the server closes after answering
		conn.Close()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(answer), "HTTP/1.1 400"), "%q: %s", head, answer)
		require.Contains(t, string(answer), `"field":"Connection"`, head)
	}
	require.Zero(t, opened, "the source is not opened for a stream that cannot run")
}

// listen serves app on a loopback port until the test ends.
func listen(t *testing.T, app *fiber.App) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return ln
}
