package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/rediscluster"
)

// TestMetricsAfterOddMethods reproduces a defect: OPTIONS, PATCH and
// TRACE requests, then /metrics must answer 200 with a body that parses.
func TestMetricsAfterOddMethods(t *testing.T) {
	_, base := startMain(t, map[string]string{})
	for i := 0; i < 3; i++ {
		for _, m := range []string{"OPTIONS", "PATCH", "TRACE"} {
			req, err := http.NewRequest(m, base+"/queue", nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
	}
	status, body := get(t, base+"/metrics")
	require.Equal(t, 200, status, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	methods := map[string]bool{}
	for _, m := range families["http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" {
				methods[l.GetValue()] = true
			}
		}
	}
	for _, m := range []string{"OPTIONS", "PATCH", "TRACE"} {
		require.True(t, methods[m], "a series for %s", m)
	}
}

// requireNoInternals fails when an answer body shows an address, a port or
// Go's error text (/readyz answered
// "read tcp 127.0.0.1:38046->127.0.0.1:26391: i/o timeout").
func requireNoInternals(t *testing.T, body string, addrs ...string) {
	t.Helper()
	for _, s := range append(addrs, "127.0.0.1", "tcp", "dial", "i/o", "timeout", "refused", "EOF", "->") {
		require.NotContains(t, body, s, "the body must not show internals")
	}
}

// TestDeadlinesWithRedisPaused: with Redis hung (SIGSTOP), /readyz, the
// queue API, the webhooks and the work buffer's API answer 503 within their
// own budgets (+ 0.5 s):
// go-redis honours the request's deadline only with ContextTimeoutEnabled.
func TestDeadlinesWithRedisPaused(t *testing.T) {
	srv := rediscluster.StartServer(t)
	secret := strings.Repeat("h", 32)
	_, base := startMain(t, map[string]string{
		"REDIS_URL": srv.URL(), "BOOKING_AUTH_SECRET": strings.Repeat("b", 32), "HMAC_SECRET": secret,
		"MONITORING_AUTH": "none", "BUFFER_API_TOKEN": strings.Repeat("t", 32),
	})
	status, _ := get(t, base+"/readyz")
	require.Equal(t, 200, status)
	bearer := func(method, url, body string) *http.Request {
		r, _ := http.NewRequest(method, url, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+strings.Repeat("t", 32))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	resume := pauseRedis(t, srv.Addr())
	budget := 2 * time.Second // QUEUE_REQUEST_TIMEOUT's default
	cases := []struct {
		name   string
		req    func() *http.Request
		budget time.Duration
	}{
		{"readyz", func() *http.Request { r, _ := http.NewRequest("GET", base+"/readyz", nil); return r }, readyzTimeout},
		{"queue stats", func() *http.Request { return signedV2(t, secret, "GET", base+"/queue/stats", "") }, budget},
		{"queue list", func() *http.Request { return signedV2(t, secret, "GET", base+"/queue?status=PENDING", "") }, budget},
		{"claim, long poll", func() *http.Request {
			return signedV2(t, secret, "POST", base+"/queue/claim", `{"worker_id":"vm-paused","wait_ms":1000}`)
		}, budget + time.Second},
		{"ack webhook", func() *http.Request {
			return signedV1(t, secret, "POST", base+"/ack", `{"queue_id":"7d1c0f5e-0000-4000-8000-000000000001","encounter_id":"e","experityActions":{}}`)
		}, budget},
		{"fail webhook", func() *http.Request {
			return signedV1(t, secret, "POST", base+"/webhook/fail", `{"queue_id":"7d1c0f5e-0000-4000-8000-000000000001","encounter_id":"e","error_message":"x"}`)
		}, budget},
		{"buffer stats", func() *http.Request { return bearer("GET", base+"/api/buffer/stats", "") }, budget},
		{"buffer event stream", func() *http.Request { return bearer("GET", base+"/api/buffer/events", "") }, budget},
		{"buffer enqueue", func() *http.Request {
			return bearer("POST", base+"/api/buffer/enqueue", `{"type":"sse.emit","idempotencyKey":"k","payload":{"channel":"room-7","event":"e","data":{}}}`)
		}, budget},
	}
	for _, c := range cases {
		start := time.Now()
		status, body := send(t, c.req())
		took := time.Since(start)
		require.Equal(t, http.StatusServiceUnavailable, status, "%s: %s", c.name, body)
		require.LessOrEqual(t, took, c.budget+500*time.Millisecond, "%s answered after %s (budget %s)", c.name, took, c.budget)
		requireNoInternals(t, body, srv.Addr())
	}
	resume()
	require.Eventually(t, func() bool { s, _ := get(t, base+"/readyz"); return s == 200 }, 10*time.Second, 100*time.Millisecond)
}

// TestClaimAnswered503KeepsNoTask: Redis hangs while a claim's script is
// on its way; the claim answers 503 within its budget, and once Redis runs
// the script after all, the task must not stay PROCESSING under a worker
// that was told the claim failed.
func TestClaimAnswered503KeepsNoTask(t *testing.T) {
	srv := rediscluster.StartServer(t)
	token := strings.Repeat("t", 24)
	_, base := startMain(t, map[string]string{
		"REDIS_URL": srv.URL(), "BOOKING_AUTH_SECRET": strings.Repeat("b", 32), "HMAC_SECRET": strings.Repeat("h", 32),
		"WEBHOOK_AUTH": "token", "WEBHOOK_TOKEN": token, "MONITORING_AUTH": "none", "BUFFER_API_TOKEN": strings.Repeat("t", 32),
	})
	call := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return send(t, req)
	}
	status, _ := call("POST", "/queue/claim", `{"worker_id":"vm-warm"}`) // loads the claim script (EVALSHA works)
	require.Equal(t, http.StatusNoContent, status)
	status, body := call("POST", "/queue", `{"encounter_id":"enc-503","payload":{"n":1}}`)
	require.Equal(t, 201, status, body)
	var created struct {
		Task struct {
			QueueID string `json:"queue_id"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &created))

	resume := pauseRedis(t, srv.Addr())
	start := time.Now()
	status, body = call("POST", "/queue/claim", `{"worker_id":"vm-503"}`)
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.Less(t, time.Since(start), 2500*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a cancel attempt or two against the hung Redis
	resume()

	var task struct {
		Task struct {
			Status   string  `json:"status"`
			Attempts int     `json:"attempts"`
			WorkerID *string `json:"worker_id"`
		} `json:"task"`
	}
	require.Eventually(t, func() bool {
		status, body := call("GET", "/queue/"+created.Task.QueueID, "")
		return status == 200 && json.Unmarshal([]byte(body), &task) == nil && task.Task.Status == "PENDING"
	}, 10*time.Second, 100*time.Millisecond, "the task of the failed claim is PENDING again (last: %+v)", task)
	require.Never(t, func() bool { // and stays so
		status, body := call("GET", "/queue/"+created.Task.QueueID, "")
		var again struct {
			Task struct {
				Status string `json:"status"`
			} `json:"task"`
		}
		return status != 200 || json.Unmarshal([]byte(body), &again) != nil || again.Task.Status != "PENDING"
	}, 500*time.Millisecond, 50*time.Millisecond, "the task of the failed claim left PENDING")
	status, body = call("GET", "/queue/"+created.Task.QueueID, "")
	require.Equal(t, 200, status)
	require.NoError(t, json.Unmarshal([]byte(body), &task))
	require.Equal(t, "PENDING", task.Task.Status)
	require.Zero(t, task.Task.Attempts, "no attempt counted")
	require.Nil(t, task.Task.WorkerID)
}

// TestV1SignatureBoundToSeedRoutes: a version-1 signature covers only the
// timestamp and the body, so a captured signed GET /queue/stats (no body)
// was valid as PATCH /queue/<id>/requeue too. The queue routes flowgate
// added require version 2; the seed's POST /queue, /ack and /fail keep
// version 1.
func TestV1SignatureBoundToSeedRoutes(t *testing.T) {
	secret := strings.Repeat("h", 32)
	env := realRedisEnv(t)
	env["MONITORING_AUTH"] = "none"
	_, base := startMain(t, env)

	status, body := send(t, signedV1(t, secret, "POST", base+"/queue", `{"encounter_id":"enc-v1","payload":{"n":1}}`))
	require.Equal(t, 201, status, "POST /queue keeps the seed's version 1: %s", body)
	var created struct {
		Task struct {
			QueueID string `json:"queue_id"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	id := created.Task.QueueID

	captured := signedV1(t, secret, "GET", base+"/queue/stats", "")
	status, body = send(t, captured)
	require.Equal(t, 401, status, "GET /queue/stats refuses version 1: %s", body)
	require.Contains(t, body, `"old_version"`)
	replayed, err := http.NewRequest("PATCH", base+"/queue/"+id+"/requeue", nil)
	require.NoError(t, err)
	replayed.Header = captured.Header.Clone()
	status, body = send(t, replayed)
	require.Equal(t, 401, status, "the captured body-less signature is no good on another route: %s", body)

	for _, r := range []struct{ method, path string }{
		{"GET", "/queue"}, {"GET", "/queue/" + id}, {"POST", "/queue/claim"}, {"POST", "/queue/" + id + "/heartbeat"},
		{"PATCH", "/queue/" + id + "/status"}, {"POST", "/queue/" + id + "/replay"},
	} {
		status, body = send(t, signedV1(t, secret, r.method, base+r.path, `{"worker_id":"vm-1","n":"`+r.method+r.path+`"}`))
		require.Equal(t, 401, status, "%s %s refuses version 1: %s", r.method, r.path, body)
	}
	status, body = send(t, signedV2(t, secret, "PATCH", base+"/queue/"+id+"/requeue", ""))
	require.Equal(t, 200, status, "version 2 works: %s", body)
	status, body = send(t, signedV1(t, secret, "POST", base+"/ack", `{"queue_id":"`+id+`","experityActions":{}}`))
	require.Equal(t, 200, status, "/ack keeps version 1: %s", body)
	status, body = send(t, signedV1(t, secret, "POST", base+"/webhook/fail", `{"queue_id":"`+id+`","error_message":"late"}`))
	require.Equal(t, 409, status, "/webhook/fail keeps version 1 (409: the task is DONE): %s", body)
}

// TestMonitoringSecureByDefault: with a real Redis, Asynqmon needs
// credentials unless MONITORING_AUTH=none says otherwise; missing both is a
// configuration error (exit 2) naming the variables (before,
// POST /monitoring/api/queues/low:pause paused a queue with no credentials
// and nothing was logged).
func TestMonitoringSecureByDefault(t *testing.T) {
	db := realRedisEnv(t)
	_, err := LoadConfig(envOf(db))
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "a real Redis without monitoring credentials is refused: %v", err)
	require.Equal(t, "MONITORING_USER", ce.Var)
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run(nil, envOf(db), &out, &errOut))
	require.Contains(t, errOut.String(), "MONITORING_USER")
	require.Contains(t, errOut.String(), "MONITORING_PASSWORD")
	require.Contains(t, errOut.String(), "MONITORING_AUTH=none")

	open := map[string]string{"MONITORING_AUTH": "none"}
	for k, v := range db {
		open[k] = v
	}
	_, err = LoadConfig(envOf(open))
	require.NoError(t, err, "MONITORING_AUTH=none opens it on purpose")
	_, err = LoadConfig(envOf(map[string]string{}))
	require.NoError(t, err, "the embedded trial stays open")

	logs := &bytes.Buffer{}
	open["FLOWGATE_ADDR"] = "127.0.0.1:0"
	cfg, err := LoadConfig(envOf(open))
	require.NoError(t, err)
	m := NewMain(cfg, slog.New(slog.NewJSONHandler(&lockedWriter{w: logs}, nil)))
	require.NoError(t, m.Run(context.Background()))
	t.Cleanup(func() { _ = m.Close() })
	req, _ := http.NewRequest(http.MethodPost, "http://"+m.Addr()+"/monitoring/api/queues/low:pause", nil)
	status, _ := send(t, req)
	require.Equal(t, 204, status)
	req, _ = http.NewRequest(http.MethodPost, "http://"+m.Addr()+"/monitoring/api/queues/low:resume", nil)
	status, _ = send(t, req)
	require.Equal(t, 204, status)
	text := logs.String()
	require.Contains(t, text, "MONITORING_AUTH=none", "warned at start")
	require.Contains(t, text, `"msg":"monitoring write","method":"POST","path":"/monitoring/api/queues/low:pause"`)
}

// lockedWriter serialises writes of concurrent loggers into a buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
