package bufferhttp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/bufferhttp"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/redistest"
)

const token = "test-token-0123456789abcdef"

type env struct {
	app  *fiber.App
	buf  *buffer.Buffer
	db   *redistest.DB
	gate chan struct{}
}

// emailHandler needs payload.to; it waits on gate when the payload says so.
type emailHandler struct {
	buffer.Base
	gate chan struct{}
}

func (h emailHandler) Validate(p json.RawMessage) error {
	if err := h.Base.Validate(p); err != nil {
		return err
	}
	var v struct {
		To string `json:"to"`
	}
	if json.Unmarshal(p, &v) != nil || v.To == "" {
		return &buffer.ValidationError{Field: "payload.to", Reason: "Missing required field: to"}
	}
	return nil
}

func (h emailHandler) Process(_ context.Context, m *buffer.Message) (any, error) {
	var v struct {
		To    string `json:"to"`
		Panic bool   `json:"panic"`
		Fail  int    `json:"fail"`
		Wait  bool   `json:"wait"`
	}
	_ = json.Unmarshal(m.Payload, &v)
	if v.Wait {
		<-h.gate
	}
	if v.Panic {
		panic("mailer exploded")
	}
	if v.Fail != 0 {
		return nil, &buffer.StatusError{StatusCode: v.Fail}
	}
	return map[string]string{"sentTo": v.To}, nil
}

func setup(t testing.TB, mod func(*buffer.Config)) *env {
	t.Helper()
	return setupWrapped(t, mod, nil)
}

// setupWrapped serves the API on wrap(buffer) (nil: the buffer itself).
func setupWrapped(t testing.TB, mod func(*buffer.Config), wrap func(*buffer.Buffer) bufferhttp.Buffer) *env {
	t.Helper()
	db := redistest.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := buffer.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, DelayedCheck: 50 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, DepthRefresh: time.Millisecond, MaxPayload: 1024, Logger: log,
		Backoff: buffer.Backoff{Base: 20 * time.Millisecond, Multiplier: 2, Max: 100 * time.Millisecond}}
	if mod != nil {
		mod(&cfg)
	}
	b, err := buffer.New(cfg)
	require.NoError(t, err)
	gate := make(chan struct{})
	require.NoError(t, b.Register(emailHandler{Base: buffer.Base{Name: "email", Retries: 1}, gate: gate}))
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
		b.Stop()
	})
	app, err := web.New(web.Options{Logger: log})
	require.NoError(t, err)
	var api bufferhttp.Buffer = b
	if wrap != nil {
		api = wrap(b)
	}
	h, err := bufferhttp.New(api, bufferhttp.Config{Token: token})
	require.NoError(t, err)
	bufferhttp.Register(app, h)
	return &env{app: app, buf: b, db: db, gate: gate}
}

// do sends a request and returns status, headers and body.
func (e *env) do(t testing.TB, method, path, body string, auth ...string) (int, http.Header, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	a := "Bearer " + token
	if len(auth) > 0 {
		a = auth[0]
	}
	if a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := e.app.Test(req, 10000)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, raw
}

var norm = contractstest.Normalizer{
	Keys: map[string]string{"request_id": "{rid}", "nextCursor": "{cursor}"},
	Rules: []contractstest.Rule{
		{RE: contractstest.UUID, Name: "uuid", Numbered: true},
		{RE: contractstest.Time, Name: "time"},
		{RE: regexpWorker, Name: "worker"},
	},
}

func golden(t *testing.T, name string, raw []byte) {
	t.Helper()
	contractstest.Golden(t, name, norm.Normalize(t, raw))
}

func errCode(t *testing.T, raw []byte) (string, map[string]any) {
	t.Helper()
	var r struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &r), string(raw))
	return r.Error.Code, r.Error.Details
}

// enqueued is the number of messages in the buffer's queues.
func (e *env) enqueued(t *testing.T) int64 {
	st, err := e.buf.Stats(context.Background())
	require.NoError(t, err)
	var n int64
	for _, q := range st.Queues {
		n += int64(q.Pending + q.Active + q.Scheduled + q.Retry + q.Completed + q.Archived)
	}
	return n
}

func TestEnqueueSingleAndLookup(t *testing.T) {
	e := setup(t, nil)
	st, _, raw := e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","priority":1,"payload":{"to":"a@b.c"},"metadata":{"correlationId":"c-1","source":"crm"}}`)
	require.Equal(t, 202, st, string(raw))
	golden(t, "buffer_http_enqueue", raw)
	var r contracts.BufferEnqueueResponse
	require.NoError(t, json.Unmarshal(raw, &r))
	require.Eventually(t, func() bool {
		_, _, raw := e.do(t, "GET", "/api/buffer/messages/"+r.MessageID, "")
		return strings.Contains(string(raw), `"state":"completed"`)
	}, 5*time.Second, 10*time.Millisecond)
	st, _, raw = e.do(t, "GET", "/api/buffer/messages/"+r.MessageID, "")
	require.Equal(t, 200, st)
	golden(t, "buffer_http_message_completed", raw)
	st, _, raw = e.do(t, "GET", "/api/buffer/messages/nope", "")
	require.Equal(t, 404, st)
	golden(t, "buffer_http_error_not_found", raw)
}

func TestEnqueueBatchPerItemResults(t *testing.T) {
	e := setup(t, nil)
	st, _, raw := e.do(t, "POST", "/api/buffer/enqueue", `{"messageId":"m-0","type":"email","payload":{"to":"z"}}`)
	require.Equal(t, 202, st, string(raw))
	body := `{"messages":[
		{"messageId":"m-1","type":"email","payload":{"to":"a"}},
		{"messageId":"m-2","type":"sms","payload":{"to":"b"}},
		{"messageId":"m-3","type":"email","payload":{"cc":"c"}},
		{"messageId":"m-0","type":"email","payload":{"to":"a"}},
		{"messageId":"m-5","type":"email","priority":9,"payload":{"to":"a"}},
		[1]
	]}`
	st, _, raw = e.do(t, "POST", "/api/buffer/enqueue", body)
	require.Equal(t, 200, st, string(raw))
	golden(t, "buffer_http_enqueue_batch", raw)
	var r contracts.BufferBatchResponse
	require.NoError(t, json.Unmarshal(raw, &r))
	require.Equal(t, 1, r.Enqueued)
	require.Equal(t, 5, r.Failed)
	codes := []contracts.Code{"", contracts.CodeHandlerNotFound, contracts.CodeInvalidMessage, contracts.CodeDuplicateMessage, contracts.CodeInvalidMessage, contracts.CodeInvalidMessage}
	for i, c := range codes {
		if c == "" {
			require.True(t, r.Results[i].Success)
			continue
		}
		require.Equal(t, c, r.Results[i].Error.Code, "item %d", i)
	}
	require.EqualValues(t, 2, e.enqueued(t))
}

// TestBadInput: each bad request gets its code and nothing is enqueued.
func TestBadInput(t *testing.T) {
	e := setup(t, nil)
	big := `{"type":"email","payload":{"to":"a","pad":"` + strings.Repeat("x", 2000) + `"}}`
	var batch strings.Builder
	batch.WriteString(`{"messages":[`)
	for i := 0; i < 1001; i++ {
		if i > 0 {
			batch.WriteString(",")
		}
		batch.WriteString(`{"type":"email","payload":{"to":"a"}}`)
	}
	batch.WriteString("]}")
	cases := []struct {
		name, body, auth string
		status           int
		code             contracts.Code
		field            string
	}{
		{"malformed_json", `{"type":"email",`, "", 400, contracts.CodeInvalidMessage, ""},
		{"wrong_type", `{"type":5}`, "", 400, contracts.CodeInvalidMessage, "type"},
		{"missing_type", `{"payload":{}}`, "", 400, contracts.CodeInvalidMessage, "type"},
		{"unknown_type", `{"type":"fax","payload":{}}`, "", 400, contracts.CodeHandlerNotFound, "type"},
		{"invalid_payload", `{"type":"email","payload":{"cc":"x"}}`, "", 400, contracts.CodeInvalidMessage, "payload.to"},
		{"oversized_payload", big, "", 400, contracts.CodeInvalidMessage, "payload"},
		{"bad_priority", `{"type":"email","priority":4,"payload":{"to":"a"}}`, "", 400, contracts.CodeInvalidMessage, "priority"},
		{"wrong_token", `{"type":"email","payload":{"to":"a"}}`, "Bearer " + strings.Repeat("x", len(token)), 401, contracts.CodeUnauthorized, ""},
		{"no_token", `{"type":"email","payload":{"to":"a"}}`, "-", 401, contracts.CodeUnauthorized, ""},
		{"batch_1001", batch.String(), "", 400, contracts.CodeInvalidMessage, "messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st int
			var raw []byte
			switch c.auth {
			case "":
				st, _, raw = e.do(t, "POST", "/api/buffer/enqueue", c.body)
			case "-":
				st, _, raw = e.do(t, "POST", "/api/buffer/enqueue", c.body, "")
			default:
				st, _, raw = e.do(t, "POST", "/api/buffer/enqueue", c.body, c.auth)
			}
			require.Equal(t, c.status, st, string(raw))
			got, det := errCode(t, raw)
			require.Equal(t, string(c.code), got)
			if c.field != "" {
				require.Equal(t, c.field, det["field"], string(raw))
			}
			golden(t, "buffer_http_error_"+c.name, raw)
			require.Zero(t, e.enqueued(t), "nothing enqueued")
		})
	}
}

func TestDuplicateQueueFullShutdownPersistence(t *testing.T) {
	e := setup(t, func(c *buffer.Config) { c.MaxQueueSize = 2; c.Concurrency = 1 })
	st, _, raw := e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","idempotencyKey":"k1","payload":{"to":"a","wait":true}}`)
	require.Equal(t, 202, st, string(raw))
	var first contracts.BufferEnqueueResponse
	require.NoError(t, json.Unmarshal(raw, &first))
	st, _, raw = e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","idempotencyKey":"k1","payload":{"to":"a"}}`)
	require.Equal(t, 409, st)
	_, det := errCode(t, raw)
	require.Equal(t, first.MessageID, det["messageId"])
	golden(t, "buffer_http_error_duplicate", raw)

	e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","payload":{"to":"b"}}`)
	st, hdr, raw := e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","payload":{"to":"c"}}`)
	require.Equal(t, 429, st, string(raw))
	require.Equal(t, "1", hdr.Get("Retry-After"))
	golden(t, "buffer_http_error_queue_full", raw)

	close(e.gate)
	e.buf.Stop()
	st, _, raw = e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","payload":{"to":"d"}}`)
	require.Equal(t, 503, st)
	golden(t, "buffer_http_error_shutdown", raw)
}

func TestPersistenceFailure(t *testing.T) {
	e := setup(t, nil)
	require.NoError(t, e.db.Client.Close()) // the buffer's shared client; asynq's servers keep theirs
	st, _, raw := e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","payload":{"to":"a"}}`)
	require.Equal(t, 503, st, string(raw))
	golden(t, "buffer_http_error_persistence", raw)
}

func TestDLQAndCircuits(t *testing.T) {
	e := setup(t, nil)
	for i := 0; i < 3; i++ {
		st, _, raw := e.do(t, "POST", "/api/buffer/enqueue", fmt.Sprintf(`{"messageId":"dead-%d","type":"email","payload":{"to":"a","fail":400}}`, i))
		require.Equal(t, 202, st, string(raw))
	}
	require.Eventually(t, func() bool {
		_, _, raw := e.do(t, "GET", "/api/buffer/dlq/count", "")
		return string(raw) == `{"count":3}`
	}, 5*time.Second, 10*time.Millisecond)
	st, _, raw := e.do(t, "GET", "/api/buffer/dlq?limit=2", "")
	require.Equal(t, 200, st)
	// Records failed in the same millisecond may list in either order.
	dlqNorm := norm
	dlqNorm.Keys = map[string]string{"messageId": "{id}", "nextCursor": "{cursor}"}
	contractstest.Golden(t, "buffer_http_dlq_list", dlqNorm.Normalize(t, raw))
	var page contracts.BufferDLQList
	require.NoError(t, json.Unmarshal(raw, &page))
	require.Len(t, page.Items, 2)
	_, _, raw = e.do(t, "GET", "/api/buffer/dlq?limit=2&cursor="+page.NextCursor, "")
	require.NoError(t, json.Unmarshal(raw, &page))
	require.Len(t, page.Items, 1)
	require.Empty(t, page.NextCursor)
	st, _, raw = e.do(t, "GET", "/api/buffer/dlq?cursor=zz", "")
	require.Equal(t, 400, st, string(raw))

	_, _, raw = e.do(t, "GET", "/api/buffer/dlq/stats", "")
	golden(t, "buffer_http_dlq_stats", raw)

	st, _, raw = e.do(t, "DELETE", "/api/buffer/dlq/dead-0", "")
	require.Equal(t, 200, st, string(raw))
	golden(t, "buffer_http_dlq_delete", raw)
	st, _, _ = e.do(t, "DELETE", "/api/buffer/dlq/dead-0", "")
	require.Equal(t, 404, st)

	st, _, raw = e.do(t, "POST", "/api/buffer/dlq/dead-1/replay", "")
	require.Equal(t, 200, st, string(raw))
	golden(t, "buffer_http_dlq_replay", raw)
	m, err := e.buf.Get(context.Background(), "dead-1")
	require.NoError(t, err)
	require.NotEqual(t, contracts.BufferCompleted, m.State)
	require.Eventually(t, func() bool {
		_, _, raw := e.do(t, "GET", "/api/buffer/dlq/count", "")
		return string(raw) == `{"count":2}` // replayed, failed again (400), back in the DLQ
	}, 5*time.Second, 10*time.Millisecond)

	st, _, raw = e.do(t, "GET", "/api/buffer/circuits", "")
	require.Equal(t, 200, st)
	golden(t, "buffer_http_circuits", raw)
	st, _, raw = e.do(t, "POST", "/api/buffer/circuits/email/reset", "")
	require.Equal(t, 200, st)
	golden(t, "buffer_http_circuit_reset", raw)
	st, _, raw = e.do(t, "POST", "/api/buffer/circuits/fax/reset", "")
	require.Equal(t, 400, st)
	code, _ := errCode(t, raw)
	require.Equal(t, "HANDLER_NOT_FOUND", code)

	st, _, raw = e.do(t, "GET", "/api/buffer/stats", "")
	require.Equal(t, 200, st)
	golden(t, "buffer_http_stats", raw)
}

// A compressed body is refused before anything inflates it: Fiber's
// c.Body() inflates gzip with no bound (the body limit counts compressed
// bytes), so a small gzip bomb could exhaust the process (review).
func TestCompressedBodyRefused(t *testing.T) {
	e := setup(t, nil)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err := zw.Write([]byte(`{"type":"email","payload":{"to":"a","pad":"` + strings.Repeat("x", 1<<20) + `"}}`))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	req := httptest.NewRequest("POST", "/api/buffer/enqueue", bytes.NewReader(zipped.Bytes()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.app.Test(req, 10000)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 400, resp.StatusCode, string(raw))
	got, det := errCode(t, raw)
	require.Equal(t, string(contracts.CodeInvalidMessage), got)
	require.Equal(t, "Content-Encoding", det["field"])
	require.Zero(t, e.enqueued(t), "nothing enqueued")
}

// auditing is a decorator over the real buffer: the API takes any
// implementation of its consumer-side interface (defect 9; before, it took
// *buffer.Buffer only).
type auditing struct {
	*buffer.Buffer
	mu  sync.Mutex
	ids []string
}

func (a *auditing) Enqueue(ctx context.Context, req contracts.BufferEnqueueRequest) (buffer.Enqueued, error) {
	e, err := a.Buffer.Enqueue(ctx, req)
	if err == nil {
		a.mu.Lock()
		a.ids = append(a.ids, e.MessageID)
		a.mu.Unlock()
	}
	return e, err
}

func TestAPIServesAnyBufferImplementation(t *testing.T) {
	var a *auditing
	e := setupWrapped(t, nil, func(b *buffer.Buffer) bufferhttp.Buffer { a = &auditing{Buffer: b}; return a })
	st, _, body := e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","payload":{"to":"a@b"},"messageId":"aud-1"}`)
	require.Equal(t, 202, st, "%s", body)
	a.mu.Lock()
	defer a.mu.Unlock()
	require.Equal(t, []string{"aud-1"}, a.ids, "the request went through the decorator")
}

// Defect 5: a handler's panic never reaches an HTTP answer: the message
// lookup carries the code and "panic: <value>", no stack, no Go file.
func TestPanicNeverLeaksToHTTP(t *testing.T) {
	e := setup(t, nil)
	st, _, body := e.do(t, "POST", "/api/buffer/enqueue", `{"type":"email","payload":{"to":"a@b","panic":true},"messageId":"boom"}`)
	require.Equal(t, 202, st, "%s", body)
	require.Eventually(t, func() bool {
		m, err := e.buf.Get(context.Background(), "boom")
		return err == nil && m.State == contracts.BufferDLQ && len(m.Errors) == 1 && m.Errors[0].Stack != ""
	}, 10*time.Second, 10*time.Millisecond, "the Go API keeps the stack")
	for _, path := range []string{"/api/buffer/messages/boom", "/api/buffer/dlq", "/api/buffer/dlq/stats"} {
		st, _, body = e.do(t, "GET", path, "")
		require.Equal(t, 200, st, "%s: %s", path, body)
		require.NotContains(t, string(body), "goroutine", path)
		require.NotContains(t, string(body), ".go:", path)
	}
	require.Contains(t, string(mustGet(t, e, "/api/buffer/messages/boom")), "HANDLER_PANIC")
}

func mustGet(t *testing.T, e *env, path string) []byte {
	t.Helper()
	_, _, body := e.do(t, "GET", path, "")
	return body
}
