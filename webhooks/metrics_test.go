package webhooks_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/test/metrictest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/webhooks"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

func TestMetricsCountEveryOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := b.srv.Registry
	unknown := "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10"

	// Every series exists from the start.
	require.Zero(t, metrictest.Get(t, reg, "flowgate_webhook_requests_total", map[string]string{"hook": "ack", "outcome": "done"}))
	require.Zero(t, metrictest.Get(t, reg, "flowgate_webhook_requests_total", map[string]string{"hook": "fail", "outcome": "dlq"}))

	acked := b.create(t, "enc-ack")
	b.claim(t, "vm-1", acked.QueueID)
	ack := `{"queue_id":"` + acked.QueueID + `","experityActions":{"a":1}}`
	b.hook(t, "/ack", ack)                                                                                      // done
	b.hook(t, "/webhook/ack", ack)                                                                              // duplicate
	b.srv.Do("POST", "/ack", []byte(`{"queue_id":"`+acked.QueueID+`","experityActions":{"a":2}}`))              // conflict
	b.srv.Do("POST", "/ack", []byte(`{"queue_id":5}`))                                                          // invalid
	b.srv.Do("POST", "/ack", []byte(ack), taskhttptest.Unsigned())                                              // unauthorized
	b.srv.Do("POST", "/webhook/ack", []byte(ack), taskhttptest.SignedWith([]byte("another-secret-0123456789"))) // unauthorized
	b.srv.Do("POST", "/ack", []byte(`{"queue_id":"`+unknown+`"}`))                                              // not_found

	retried := b.create(t, "enc-retry")
	b.claim(t, "vm-1", retried.QueueID)
	b.hook(t, "/fail", `{"queue_id":"`+retried.QueueID+`"}`) // requeued
	r := b.srv.Do("POST", "/queue", []byte(`{"encounter_id":"enc-dlq","max_attempts":1}`))
	require.Equal(t, 201, r.Status)
	var dead contracts.CreateResponse
	r.Decode(t, &dead)
	b.claim(t, "vm-1", dead.Task.QueueID)
	b.hook(t, "/webhook/fail", `{"queue_id":"`+dead.Task.QueueID+`"}`)                              // dlq
	b.srv.Do("POST", "/fail", []byte(`{"queue_id":"`+retried.QueueID+`"}`))                         // duplicate (the same FAIL again)
	b.srv.Do("POST", "/fail", []byte(`{"queue_id":"`+retried.QueueID+`","error_message":"other"}`)) // conflict
	b.srv.Do("POST", "/fail", []byte(`{`))                                                          // invalid
	b.srv.Do("POST", "/fail", []byte(`{}`), taskhttptest.Unsigned())                                // unauthorized
	b.srv.Do("POST", "/fail", []byte(`{"queue_id":"`+unknown+`"}`))                                 // not_found

	require.Equal(t, map[string]int{"done": 1, "duplicate": 1, "conflict": 1, "invalid": 1, "unauthorized": 2, "not_found": 1},
		outcomes(t, reg, "ack"))
	require.Equal(t, map[string]int{"requeued": 1, "dlq": 1, "duplicate": 1, "conflict": 1, "invalid": 1, "unauthorized": 1, "not_found": 1},
		outcomes(t, reg, "fail"))
	require.Equal(t, 7.0, metrictest.Get(t, reg, "flowgate_webhook_duration_seconds", map[string]string{"hook": "ack"}))
	require.Equal(t, 7.0, metrictest.Get(t, reg, "flowgate_webhook_duration_seconds", map[string]string{"hook": "fail"}))

	// The app's own metrics see the same requests by route.
	require.Equal(t, 1.0, metrictest.Get(t, reg, "http_requests_total", map[string]string{"route": "/webhook/fail", "status": "200"}))
}

// downLedger fails like a ledger whose Redis is unreachable.
type downLedger struct{}

func (downLedger) AckBriefChecked(context.Context, contracts.AckRequest, *tasks.ReplayCheck) (tasks.AckResult, error) {
	return tasks.AckResult{}, &contracts.Error{Code: contracts.CodeUnavailable, Message: "task store unavailable", Err: errors.New("dial tcp: refused")}
}

func (downLedger) FailChecked(context.Context, contracts.FailRequest, *tasks.ReplayCheck) (tasks.FailResult, error) {
	return tasks.FailResult{}, &contracts.Error{Code: contracts.CodeUnavailable, Message: "task store unavailable", Err: errors.New("dial tcp: refused")}
}

func TestLedgerDownIs503AndCountedAsError(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	app, err := web.New(web.Options{})
	require.NoError(t, err)
	h, err := webhooks.New(downLedger{}, &follower{}, webhooks.Config{Registerer: reg, DisableAliases: true})
	require.NoError(t, err)
	webhooks.Register(app, h)
	for _, path := range []string{"/ack", "/fail"} {
		resp, err := app.Test(httptest.NewRequest("POST", path, strings.NewReader(`{"queue_id":"6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10"}`)), -1)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, 503, resp.StatusCode, string(body))
		require.NotContains(t, string(body), "dial tcp")
		if path == "/ack" {
			taskhttptest.Golden(t, "error_unavailable", body)
		}
	}
	require.Equal(t, map[string]int{"error": 1}, outcomes(t, reg, "ack"))
	require.Equal(t, map[string]int{"error": 1}, outcomes(t, reg, "fail"))
}
