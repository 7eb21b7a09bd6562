package taskhttp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

func TestUpdateStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	path := "/queue/" + task.QueueID + "/status"

	r := b.srv.Do("PATCH", path, []byte(`{"status":"PROCESSING","worker_id":"vm-1"}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	r = b.srv.Do("PATCH", path, []byte(`{"status":"ERROR","error_message":"portal timeout","increment_attempts":true}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "task_response_status", r.Body)
	var resp contracts.TaskResponse
	r.Decode(t, &resp)
	require.Equal(t, contracts.StatusError, resp.Task.Status)
	require.Equal(t, 1, resp.Task.Attempts)
	require.Equal(t, "portal timeout", resp.Task.ErrorMessage)

	before := b.snapshot(t)
	// ERROR → DONE is not an edge of the diagram.
	r = b.srv.Do("PATCH", path, []byte(`{"status":"DONE"}`))
	env := r.Error(t, 409, contracts.CodeConflict)
	require.Equal(t, "ERROR", env.Error.Details["current_status"])
	taskhttptest.Golden(t, "error_conflict", r.Body)
	for body, field := range map[string]string{
		`{"status":"FINISHED"}`: "status",
		`{}`:                    "status",
		`{"status":5}`:          "status",
		`{"status":"PENDING","parsed_payload":[1]}`:   "parsed_payload",
		`{"status":"ERROR","increment_attempts":"y"}`: "increment_attempts",
	} {
		r := b.srv.Do("PATCH", path, []byte(body))
		env := r.Error(t, 400, contracts.CodeInvalid)
		require.Equal(t, field, env.Error.Details["field"], body)
	}
	r = b.srv.Do("PATCH", "/queue/"+strings.Repeat("x", 500)+"/status", []byte(`{"status":"DONE"}`))
	r.Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, before, b.snapshot(t))
}

// PATCH status cannot take a dead letter out of the DLQ (that would leave
// its archived Asynq task and durable record behind): 409 with reason
// dead_letter, pointing at the replay endpoint. Amendments that keep it a
// dead letter pass.
func TestUpdateStatusOfDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	path := "/queue/" + task.QueueID + "/status"
	b.claim(t, "vm-1")
	r := b.srv.Do("PATCH", path, []byte(`{"status":"ERROR","error_message":"`+contracts.DLQErrorMessage+`","parsed_payload":{"dlq":true}}`))
	require.Equal(t, 200, r.Status, string(r.Body))

	before := b.snapshot(t)
	for _, body := range []string{
		`{"status":"PENDING"}`,
		`{"status":"ERROR","parsed_payload":{"dlq":false}}`,
		`{"status":"ERROR","parsed_payload":null}`,
	} {
		env := b.srv.Do("PATCH", path, []byte(body)).Error(t, 409, contracts.CodeConflict)
		require.Equal(t, "dead_letter", env.Error.Details["reason"], body)
		require.Equal(t, "ERROR", env.Error.Details["current_status"], body)
		require.Equal(t, true, env.Error.Details["dlq"], body)
		require.Contains(t, env.Error.Message, "POST /queue/"+task.QueueID+"/replay", body)
	}
	require.Equal(t, before, b.snapshot(t))
	require.Empty(t, b.replay.Calls())

	r = b.srv.Do("PATCH", path, []byte(`{"status":"ERROR","error_message":"called the clinic","parsed_payload":{"dlq":true,"note":"x"}}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.TaskResponse
	r.Decode(t, &resp)
	require.True(t, resp.Task.InDLQ())
	require.Equal(t, "called the clinic", resp.Task.ErrorMessage)

	r = b.srv.Do("POST", "/queue/"+task.QueueID+"/replay", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
}

func TestRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	path := "/queue/" + task.QueueID + "/requeue"

	// A PENDING task: nothing to do, said so.
	r := b.srv.Do("PATCH", path, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "task_response_requeue_noop", r.Body)
	var resp contracts.TaskResponse
	r.Decode(t, &resp)
	require.True(t, resp.Noop)
	require.Contains(t, resp.Message, "already PENDING")

	b.claim(t, "vm-1")
	b.srv.Do("PATCH", "/queue/"+task.QueueID+"/status", []byte(`{"status":"ERROR","increment_attempts":true}`))
	r = b.srv.Do("PATCH", path, []byte(`{"priority":"normal"}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "task_response_requeue", r.Body)
	r.Decode(t, &resp)
	require.False(t, resp.Noop)
	require.Equal(t, contracts.StatusPending, resp.Task.Status)
	require.Equal(t, contracts.PriorityNormal, resp.Task.Priority)

	before := b.snapshot(t)
	env := b.srv.Do("PATCH", path, []byte(`{"priority":"NOW"}`)).Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, "priority", env.Error.Details["field"])
	b.srv.Do("PATCH", path, []byte(`{"priority":`)).Error(t, 400, contracts.CodeInvalid)
	b.srv.Do("PATCH", "/queue/6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10/requeue", nil).Error(t, 404, contracts.CodeNotFound)
	require.Equal(t, before, b.snapshot(t))
}

func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	path := "/queue/" + task.QueueID + "/replay"

	// Not a dead letter: conflict, through the Replayer.
	env := b.srv.Do("POST", path, nil).Error(t, 409, contracts.CodeConflict)
	require.Equal(t, "PENDING", env.Error.Details["current_status"])
	require.Equal(t, "not_dlq", env.Error.Details["reason"])

	_, err := b.ledger.MoveToDLQ(b.ctx, task.QueueID, "")
	require.NoError(t, err)
	r := b.srv.Do("POST", "/queue/"+strings.ToUpper(task.QueueID)+"/replay", []byte(`{"priority":"LOW"}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "task_response_replay", r.Body)
	var resp contracts.TaskResponse
	r.Decode(t, &resp)
	require.Equal(t, contracts.StatusPending, resp.Task.Status)
	require.Equal(t, contracts.PriorityLow, resp.Task.Priority)
	require.Zero(t, resp.Task.Attempts)
	require.Equal(t, "null", string(resp.Task.ParsedPayload), "the dlq flag is cleared")

	// The path id is checked before the Replayer sees it, and given canonical.
	before := len(b.replay.Calls())
	b.srv.Do("POST", "/queue/"+strings.Repeat("a", 500)+"/replay", nil).Error(t, 400, contracts.CodeInvalid)
	b.srv.Do("POST", path, []byte(`{"priority":1}`)).Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, []string{task.QueueID, task.QueueID}, b.replay.Calls())
	require.Equal(t, 2, before)
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	path := "/queue/" + task.QueueID + "/heartbeat"

	env := b.srv.Do("POST", path, []byte(`{"worker_id":"vm-1"}`)).Error(t, 409, contracts.CodeConflict)
	require.Equal(t, "PENDING", env.Error.Details["current_status"])

	b.claim(t, "vm-1")
	r := b.srv.Do("POST", path, []byte(`{"worker_id":"vm-1"}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "task_response_heartbeat", r.Body)

	before := b.snapshot(t)
	env = b.srv.Do("POST", path, []byte(`{"worker_id":"vm-2"}`)).Error(t, 409, contracts.CodeConflict)
	require.Equal(t, "wrong_worker", env.Error.Details["reason"])
	require.Equal(t, "PROCESSING", env.Error.Details["current_status"])
	b.srv.Do("POST", path, []byte(`{}`)).Error(t, 400, contracts.CodeInvalid)
	b.srv.Do("POST", path, nil).Error(t, 400, contracts.CodeInvalid)
	b.srv.Do("POST", path, []byte(`{"worker_id":["vm-1"]}`)).Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, before, b.snapshot(t))
}

func TestClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)

	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1"}`))
	require.Equal(t, 204, r.Status, string(r.Body))
	require.Empty(t, r.Body)

	low := b.create(t, "enc-low", contracts.PriorityLow)
	high := b.create(t, "enc-high", contracts.PriorityHigh)
	r = b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","limit":5}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "claim_response", r.Body)
	var resp contracts.ClaimResponse
	r.Decode(t, &resp)
	require.Len(t, resp.Tasks, 2)
	require.Equal(t, []string{high.QueueID, low.QueueID}, []string{resp.Tasks[0].QueueID, resp.Tasks[1].QueueID})

	b.create(t, "enc-3", "")
	before := b.snapshot(t)
	for body, field := range map[string]string{
		`{}`:                                  "worker_id",
		`{"worker_id":""}`:                    "worker_id",
		`{"worker_id":"vm","limit":51}`:       "limit",
		`{"worker_id":"vm","limit":-1}`:       "limit",
		`{"worker_id":"vm","wait_ms":20001}`:  "wait_ms",
		`{"worker_id":"vm","wait_ms":-5}`:     "wait_ms",
		`{"worker_id":"vm","wait_ms":"1000"}`: "wait_ms",
		`{"worker_id":"vm","limit":1.5}`:      "limit",
	} {
		env := b.srv.Do("POST", "/queue/claim", []byte(body)).Error(t, 400, contracts.CodeInvalid)
		require.Equal(t, field, env.Error.Details["field"], body)
	}
	require.Equal(t, before, b.snapshot(t))
}

func TestAuthenticationRequired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	before := b.snapshot(t)
	for _, rt := range []struct{ method, path, body string }{
		{"POST", "/queue", `{"encounter_id":"x"}`},
		{"GET", "/queue", ``},
		{"GET", "/queue/stats", ``},
		{"GET", "/queue/" + task.QueueID, ``},
		{"POST", "/queue/claim", `{"worker_id":"vm"}`},
		{"PATCH", "/queue/" + task.QueueID + "/status", `{"status":"PROCESSING"}`},
		{"PATCH", "/queue/" + task.QueueID + "/requeue", ``},
		{"POST", "/queue/" + task.QueueID + "/replay", ``},
		{"POST", "/queue/" + task.QueueID + "/heartbeat", `{"worker_id":"vm"}`},
	} {
		var body []byte
		if rt.body != "" {
			body = []byte(rt.body)
		}
		env := b.srv.Do(rt.method, rt.path, body, taskhttptest.Unsigned()).Error(t, 401, contracts.CodeUnauthorized)
		require.Equal(t, "missing_headers", env.Error.Details["reason"], rt.path)
	}
	require.Equal(t, before, b.snapshot(t))
	require.Empty(t, b.replay.Calls())
}
