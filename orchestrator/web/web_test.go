package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/metrictest"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/web"
)

type fixture struct {
	app  *fiber.App
	base string
	reg  *prometheus.Registry
	logs *bytes.Buffer
}

// setup serves a web.New app with the test routes, plus those that routes
// adds; every route is registered before the app listens (Fiber's router
// is not safe to change while serving).
func setup(t *testing.T, routes ...func(*fiber.App)) fixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &bytes.Buffer{}
	app, err := web.New(web.Options{BodyLimit: 4096, Registerer: reg, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	app.Post("/echo/:id", func(c *fiber.Ctx) error {
		var body struct {
			N int `json:"n"`
		}
		if err := contracts.DecodeJSON(c.Body(), &body); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"n": body.N})
	})
	app.Get("/panic", func(*fiber.Ctx) error { panic("kaboom") })
	app.Get("/conflict", func(*fiber.Ctx) error {
		return &contracts.Error{Code: contracts.CodeConflict, Message: "task is DONE", Details: map[string]any{"current_status": "DONE"}}
	})
	for _, add := range routes {
		add(app)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return fixture{app: app, base: "http://" + ln.Addr().String(), reg: reg, logs: logs}
}

// do sends req over a real connection (body-limit errors only exist there).
func do(t *testing.T, f fixture, req *http.Request) (int, contracts.ErrorResponse, http.Header) {
	t.Helper()
	u, err := url.Parse(f.base + req.URL.RequestURI())
	require.NoError(t, err)
	req.URL, req.RequestURI, req.Host = u, "", u.Host
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env contracts.ErrorResponse
	_ = json.Unmarshal(raw, &env)
	return resp.StatusCode, env, resp.Header
}

func TestErrorModel(t *testing.T) {
	f := setup(t)
	cases := []struct {
		name   string
		req    *http.Request
		status int
		code   contracts.Code
	}{
		{"bad json", httptest.NewRequest("POST", "/echo/1", strings.NewReader(`{"n":`)), 400, contracts.CodeInvalid},
		{"wrong type", httptest.NewRequest("POST", "/echo/1", strings.NewReader(`{"n":"x"}`)), 400, contracts.CodeInvalid},
		{"too large", httptest.NewRequest("POST", "/echo/1", strings.NewReader(`{"n":1,"pad":"`+strings.Repeat("x", 8192)+`"}`)), 413, contracts.CodeTooLarge},
		{"unknown route", httptest.NewRequest("GET", "/nope", nil), 404, contracts.CodeNotFound},
		{"conflict", httptest.NewRequest("GET", "/conflict", nil), 409, contracts.CodeConflict},
		{"panic", httptest.NewRequest("GET", "/panic", nil), 500, contracts.CodeInternal},
	}
	for _, tc := range cases {
		status, env, hdr := do(t, f, tc.req)
		require.Equal(t, tc.status, status, tc.name)
		require.False(t, env.Success, tc.name)
		require.Equal(t, tc.code, env.Error.Code, tc.name)
		require.NotEmpty(t, env.Error.RequestID, tc.name)
		require.Equal(t, env.Error.RequestID, hdr.Get(web.HeaderRequestID), tc.name)
	}
	require.Equal(t, 1.0, metrictest.Must(t, f.reg, "http_requests_total", map[string]string{"route": "rejected", "status": "413"}),
		"a body refused before the middleware still counts")
	require.Contains(t, f.logs.String(), `"route":"rejected"`)
	require.Contains(t, f.logs.String(), "panic recovered")
	require.NotContains(t, f.logs.String(), `"message":"kaboom"`, "panic text must not reach clients")
}

func TestErrorEnvelopeOverHTTPGolden(t *testing.T) {
	f := setup(t)
	req := httptest.NewRequest("GET", "/conflict", nil)
	req.Header.Set(web.HeaderRequestID, "req-fixed-1")
	resp, err := f.app.Test(req, -1)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	contractstest.Golden(t, "error_envelope_conflict", raw)
}

func TestRequestIDHonouredOrReplaced(t *testing.T) {
	f := setup(t)
	req := httptest.NewRequest("POST", "/echo/1", strings.NewReader(`{"n":2}`))
	req.Header.Set(web.HeaderRequestID, "abc-123")
	_, _, hdr := do(t, f, req)
	require.Equal(t, "abc-123", hdr.Get(web.HeaderRequestID))

	req = httptest.NewRequest("POST", "/echo/1", strings.NewReader(`{"n":2}`))
	req.Header.Set(web.HeaderRequestID, "bad id with spaces")
	_, _, hdr = do(t, f, req)
	require.NotEqual(t, "bad id with spaces", hdr.Get(web.HeaderRequestID))
	require.Len(t, hdr.Get(web.HeaderRequestID), 36)
}

func TestMetricsAndAccessLog(t *testing.T) {
	f := setup(t)
	for i := 0; i < 3; i++ {
		do(t, f, httptest.NewRequest("POST", "/echo/"+string(rune('a'+i)), strings.NewReader(`{"n":1}`)))
	}
	do(t, f, httptest.NewRequest("GET", "/x/y/z", nil))
	require.Equal(t, 3.0, metrictest.Must(t, f.reg, "http_requests_total", map[string]string{"route": "/echo/:id", "status": "200"}))
	require.Equal(t, 1.0, metrictest.Must(t, f.reg, "http_requests_total", map[string]string{"route": "unmatched", "status": "404"}))
	var line map[string]any
	first, _, _ := strings.Cut(f.logs.String(), "\n")
	require.NoError(t, json.Unmarshal([]byte(first), &line))
	for _, k := range []string{"route", "status", "latency_ms", "request_id", "method"} {
		require.Contains(t, line, k)
	}
}

// TestMetricLabelsSurviveBufferReuse: the method label is copied out of
// Fiber's request buffer, so later requests on the same connection do not
// rewrite the label values of earlier series ("POS", "GETT"…), which made
// the registry refuse to gather (duplicate series → /metrics 500).
func TestMetricLabelsSurviveBufferReuse(t *testing.T) {
	f := setup(t, func(app *fiber.App) {
		app.Get("/queue", func(c *fiber.Ctx) error { return c.SendStatus(200) })
	})
	methods := []string{"OPTIONS", "PATCH", "TRACE", "GET", "POST", "DELETE", "PUT"}
	for i := 0; i < 3; i++ {
		for _, m := range methods {
			do(t, f, httptest.NewRequest(m, "/queue", nil))
			do(t, f, httptest.NewRequest(m, "/readyz", nil))
		}
	}
	mfs, err := f.reg.Gather()
	require.NoError(t, err, "gathering must not find duplicate series")
	seen := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					seen[l.GetValue()] = true
				}
			}
		}
	}
	for m := range seen {
		require.Contains(t, methods, m, "label value %q is not a method that was sent", m)
	}
	for _, m := range methods {
		require.True(t, seen[m], "method %s has a series", m)
	}
}

// rawRequest writes raw bytes on a new connection and returns the status
// and the decoded error envelope of the answer.
func rawRequest(t *testing.T, f fixture, raw string, wait time.Duration) (int, contracts.ErrorResponse) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(raw))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var env contracts.ErrorResponse
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(body, &env), "an envelope: %s", body)
	return resp.StatusCode, env
}

// TestServerRefusalsHaveTheirStatus: a request not received within the
// read timeout answers 408 and one whose request line or headers overflow
// the read buffer 431, each with the flowgate envelope and a stable
// message (both answered 400 invalid).
func TestServerRefusalsHaveTheirStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	app, err := web.New(web.Options{Registerer: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReadTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	app.Get("/x", func(c *fiber.Ctx) error { return c.SendString("ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	f := fixture{app: app, base: "http://" + ln.Addr().String(), reg: reg}

	status, env := rawRequest(t, f, "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: ", 5*time.Second)
	require.Equal(t, http.StatusRequestTimeout, status)
	require.Equal(t, contracts.CodeTimeout, env.Error.Code)
	require.NotEmpty(t, env.Error.RequestID)

	status, env = rawRequest(t, f, "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: "+strings.Repeat("b", 16<<10)+"\r\n\r\n", 5*time.Second)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status)
	require.Equal(t, contracts.CodeHeadersTooLarge, env.Error.Code)

	status, env = rawRequest(t, f, "GET /"+strings.Repeat("p", 16<<10)+" HTTP/1.1\r\nHost: a\r\n\r\n", 5*time.Second)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status, "an overlong request line too")
	require.Equal(t, contracts.CodeHeadersTooLarge, env.Error.Code)

	status, env = rawRequest(t, f, "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: nope\r\n\r\n", 5*time.Second)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "malformed HTTP request", env.Error.Message, "the parser's text is not echoed")
}

// TestHijackedConnsAreKept: a hijacked connection (an SSE stream) outlives
// its hijack handler; the stream closes it (sse.Detach), so fasthttp frees
// the request context and read buffer as soon as the stream is set up.
func TestHijackedConnsAreKept(t *testing.T) {
	app, err := web.New(web.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.True(t, app.Server().KeepHijackedConns)
}
