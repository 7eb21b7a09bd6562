package sse_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

// TestDetachedConnOutlivesItsHijackHandler: after Detach's fn returns, the
// stream's owner still writes to the Conn from another goroutine until it
// closes it, whether or not the server keeps hijacked connections (without
// it, Detach holds the hijack goroutine until Close).
func TestDetachedConnOutlivesItsHijackHandler(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint("KeepHijackedConns=", keep), func(t *testing.T) {
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			app.Server().KeepHijackedConns = keep
			conns := make(chan *sse.Conn, 1)
			app.Get("/s", func(c *fiber.Ctx) error {
				sse.Detach(c, time.Second, func(conn *sse.Conn) {
					_, err := conn.TryWrite(sse.AppendChunk(nil, sse.Event{Data: []byte("early")}))
					if !errors.Is(err, sse.ErrWouldBlock) { // nothing goes out before the head
						panic(fmt.Sprintf("TryWrite before the head: %v", err))
					}
					if err := conn.Flush(sse.AppendRetry(nil, time.Second)); err != nil {
						panic(err)
					}
					conns <- conn
				})
				return nil
			})
			ln := listen(t, app)

			resp, err := http.Get("http://" + ln.Addr().String() + "/s")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, sse.ContentType, resp.Header.Get("Content-Type"))
			r := bufio.NewReader(resp.Body)
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "retry: 1000\n", line)
			conn := <-conns
			time.Sleep(50 * time.Millisecond) // the hijack handler has returned

			n, err := conn.TryWrite(sse.AppendChunk(nil, sse.Event{Data: []byte("later")}))
			require.NoError(t, err)
			require.Positive(t, n)
			conn.Close(sse.AppendChunk(nil, sse.Event{Data: []byte("bye")}))
			rest, err := io.ReadAll(r)
			require.NoError(t, err, "the response ends with its last chunk")
			require.Equal(t, "\ndata: later\n\ndata: bye\n\n", string(rest))
		})
	}
}

// TestAbortFailsAWaitingFlush: a Flush waiting for a client that does not
// read fails at once on Abort with ErrStalled (not after the write timeout).
func TestAbortFailsAWaitingFlush(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Server().KeepHijackedConns = true
	done := make(chan error, 1)
	conns := make(chan *sse.Conn, 1)
	app.Get("/s", func(c *fiber.Ctx) error {
		sse.Detach(c, time.Minute, func(conn *sse.Conn) {
			big := sse.AppendChunk(nil, sse.Event{Data: []byte(strings.Repeat("x", 16<<20))})
			conns <- conn
			done <- conn.Flush(big) // far more than the socket buffers hold
			conn.Close(nil)
		})
		return nil
	})
	ln := listen(t, app)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	_, err = fmt.Fprintf(c, "GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	conn := <-conns
	time.Sleep(100 * time.Millisecond) // the buffers fill; the client reads nothing
	start := time.Now()
	conn.Abort()
	select {
	case err := <-done:
		require.ErrorIs(t, err, sse.ErrStalled)
		require.Less(t, time.Since(start), 5*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("Abort did not end the waiting Flush")
	}
}
