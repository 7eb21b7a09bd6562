package builtin_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/bufferhttp"
	"github.com/flowgate/flowgate/orchestrator/buffer/builtin"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
	"github.com/flowgate/flowgate/test/redistest"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// sign is the test's signer: flowgate's webhook signature (hmacsig).
func sign(ts time.Time, body []byte) (string, string) { return hmacsig.Sign(secret, ts, body) }

func newBuffer(t *testing.T) (*buffer.Buffer, *redistest.DB) {
	t.Helper()
	db := redistest.New(t)
	b, err := buffer.New(buffer.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, DelayedCheck: 50 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Backoff: buffer.Backoff{Base: 20 * time.Millisecond, Multiplier: 2, Max: 100 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	return b, db
}

func wait(t *testing.T, b *buffer.Buffer, id string, st contracts.BufferState) *buffer.Message {
	t.Helper()
	var m *buffer.Message
	require.Eventually(t, func() bool {
		var err error
		m, err = b.Get(context.Background(), id)
		return err == nil && m.State == st
	}, 10*time.Second, 10*time.Millisecond)
	return m
}

func TestWebhookForwardSignsAndClassifies(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, sig := sign(mustParse(r.Header.Get("X-Timestamp")), body)
		if r.Header.Get("X-Signature") != sig || r.Header.Get("X-Timestamp") != ts {
			w.WriteHeader(401)
			return
		}
		// Each attempt signs which delivery it is (the flaky message's two
		// attempts carry the same X-Signature within a second).
		if r.Header.Get("X-Buffer-Signature") != hex.EncodeToString(hmacsig.DeliveryMAC(secret, ts,
			r.Header.Get("X-Buffer-Message-Id"), r.Header.Get("X-Buffer-Attempt"), body)) || r.Header.Get("X-Buffer-Message-Id") == "" {
			w.WriteHeader(401)
			return
		}
		switch {
		case strings.Contains(string(body), `"gone"`):
			w.WriteHeader(404)
		case strings.Contains(string(body), `"flaky"`) && calls.Add(1) == 1:
			w.WriteHeader(503)
		default:
			w.WriteHeader(204)
		}
	}))
	defer srv.Close()
	b, _ := newBuffer(t)
	wh, err := builtin.NewWebhook(srv.URL, 2*time.Second, hmacsig.Sender{Secret: secret})
	require.NoError(t, err)
	require.NoError(t, b.Register(wh))
	require.NoError(t, b.Start())

	flaky, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: builtin.TypeWebhookForward, Payload: json.RawMessage(`{"k":"flaky"}`)})
	require.NoError(t, err)
	gone, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: builtin.TypeWebhookForward, Payload: json.RawMessage(`{"k":"gone"}`)})
	require.NoError(t, err)
	m := wait(t, b, flaky.MessageID, contracts.BufferCompleted)
	require.Equal(t, 2, m.AttemptCount, "503 retried")
	require.JSONEq(t, `{"status":204}`, string(m.Result))
	g := wait(t, b, gone.MessageID, contracts.BufferDLQ)
	require.Equal(t, "HTTP_404", g.LastError.Code, "404 not retried")
	require.Equal(t, 1, g.AttemptCount)
}

// mustParse reads an X-Timestamp (unix seconds); a malformed one is the zero time.
func mustParse(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0)
}

// TestSSEEmitReachesEventStreams: an sse.emit message reaches a
// /api/buffer/events?channel= stream; the unfiltered stream sees the
// buffer's own events.
func TestSSEEmitReachesEventStreams(t *testing.T) {
	b, db := newBuffer(t)
	require.NoError(t, b.Register(builtin.NewEmit(db.Client, b.Events(), nil)))
	require.NoError(t, b.Start())
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/events", bufferhttp.Events(db.Client, b.Events(), sse.Options{Heartbeat: 50 * time.Millisecond}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })

	open := func(q string) *bufio.Reader {
		resp, err := http.Get("http://" + ln.Addr().String() + "/events" + q)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewReader(resp.Body)
	}
	room, all := open("?channel=room-7"), open("")
	require.Eventually(t, func() bool {
		n := db.Client.PubSubNumSub(context.Background(), b.Events()).Val()[b.Events()]
		return n == 2
	}, 5*time.Second, 10*time.Millisecond)

	_, err = b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "sse.emit",
		Payload: json.RawMessage(`{"channel":"room-7","event":"booking.updated","data":{"slot":"9:30"}}`)})
	require.NoError(t, err)
	_, err = b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "sse.emit", Payload: json.RawMessage(`{"channel":"room-7"}`)})
	require.Equal(t, contracts.CodeInvalidMessage, contracts.ErrorCode(err))

	ev, data := next(t, room)
	require.Equal(t, "booking.updated", ev)
	require.JSONEq(t, `{"slot":"9:30"}`, data)
	seen := map[string]bool{}
	for !seen["enqueued"] || !seen["completed"] {
		ev, _ := next(t, all)
		seen[ev] = true
	}
}

// next reads the next event's name and data.
func next(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var ev, data string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			return ev, data
		}
	}
}

// webhook.forward follows no redirect, even with a client that would: a
// 302 (which Go would turn into a body-less GET) and a 307 (which would
// carry the body and signature to the host it names) dead-letter the
// message at once, never completed, and the other host sees nothing.
func TestWebhookForwardRedirectDeadLetters(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/stolen", status)
		}))
		defer srv.Close()
		b, _ := newBuffer(t)
		follows := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
		wh, err := builtin.NewWebhook(srv.URL, 2*time.Second, hmacsig.Sender{Secret: secret, Client: follows})
		require.NoError(t, err)
		require.NoError(t, b.Register(wh))
		require.NoError(t, b.Start())
		e, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: builtin.TypeWebhookForward, Payload: json.RawMessage(`{"k":1}`)})
		require.NoError(t, err)
		m := wait(t, b, e.MessageID, contracts.BufferDLQ)
		require.Equal(t, "HTTP_"+strconv.Itoa(status), m.LastError.Code)
		require.Contains(t, m.LastError.Message, "not followed")
		require.Equal(t, 1, m.AttemptCount, "not retried")
	}
	require.Zero(t, elsewhere.Load(), "a POST followed a redirect")
}

// stallingTarget answers nothing until the client goes away (or 10 s).
func stallingTarget(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read to its end: the server then sees the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The built-in handlers say they honour their context, so the buffer
// calls them on the worker's goroutine (buffer.ContextHonourer); a target
// that never answers ends a webhook.forward at the attempt's deadline.
func TestBuiltinsHonourTheirContext(t *testing.T) {
	for _, h := range []buffer.Handler{&builtin.Webhook{}, &builtin.Emit{}, builtin.NewNoop()} {
		c, ok := h.(buffer.ContextHonourer)
		require.True(t, ok && c.HonoursContext(), "%T", h)
	}
	wh, err := builtin.NewWebhook(stallingTarget(t).URL, time.Second, hmacsig.Sender{Secret: secret})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = wh.Process(ctx, &buffer.Message{MessageID: "m", Payload: json.RawMessage(`{}`)})
	require.Error(t, err)
	require.Less(t, time.Since(t0), 2*time.Second, "given up at the deadline, not the target's 10 s")
}
