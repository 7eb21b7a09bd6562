package webhooks_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

// A version-1 signature covers timestamp.body only, so a captured request
// is valid on any route with the same bytes and headers. It is accepted at
// most once across all routes: an honest FAIL without worker_id, replayed
// to /ack after another worker re-claimed the task, is refused as a replay
// and leaves the task with its new holder. The same body freshly signed
// for /ack is refused too (400, field error_message): an ACK carries no
// error_message.
func TestCapturedFailReplayedToAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-captured")
	b.claim(t, "vm-1", task.QueueID)

	// The honest FAIL, without worker_id; its bytes and headers are captured.
	fail := []byte(`{"queue_id":"` + task.QueueID + `","encounter_id":"enc-captured","error_message":"Experity portal timeout"}`)
	at := time.Now()
	r := b.srv.Do("POST", "/fail", fail, taskhttptest.SignedAt(at))
	require.Equal(t, 200, r.Status, string(r.Body))
	var failed contracts.WebhookResponse
	r.Decode(t, &failed)
	require.Equal(t, contracts.StatusError, failed.Status)
	require.True(t, failed.Requeued)

	// The retry is due; another worker claims the task.
	b.follower.Due(t)
	b.claim(t, "vm-2", task.QueueID)
	before := b.snapshot(t)

	// The captured FAIL replayed to /ack (and n8n's path): a replay.
	for _, path := range []string{"/ack", "/webhook/ack", "/fail"} {
		env := b.srv.Do("POST", path, fail, taskhttptest.SignedAt(at)).Error(t, 401, contracts.CodeUnauthorized)
		require.Equal(t, "replayed", env.Error.Details["reason"], path)
	}
	// The same body freshly signed (a FAIL sent to the wrong hook): 400.
	for _, body := range []string{
		string(fail),
		`{"queue_id":"` + task.QueueID + `","encounter_id":"enc-captured","error_message":""}`,
		`{"queue_id":"` + task.QueueID + `","experityActions":{},"error_message":null}`,
	} {
		r := b.srv.Do("POST", "/ack", []byte(body))
		env := r.Error(t, 400, contracts.CodeInvalid)
		require.Equal(t, "error_message", env.Error.Details["field"], body)
	}

	require.Equal(t, before, b.snapshot(t), "the refused requests changed the ledger")
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusProcessing, got.Status)
	require.Equal(t, "vm-2", got.WorkerID)
	require.Len(t, b.follower.Calls(), 1, "only the honest FAIL reached the follower")
	require.Equal(t, map[string]int{"unauthorized": 2, "invalid": 3}, outcomes(t, b.srv.Registry, "ack"))

	// The holder's own ACK still completes the task.
	resp, _ := b.hook(t, "/ack", `{"queue_id":"`+task.QueueID+`","encounter_id":"enc-captured","experityActions":{},"worker_id":"vm-2"}`)
	require.Equal(t, contracts.StatusDone, resp.Status)
}

// A captured POST /queue (version 1) replayed to the webhooks is refused
// as a replay: it neither marks its task DONE nor records a FAIL.
func TestCapturedCreateReplayedToWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.NewString()
	create := []byte(`{"queue_id":"` + id + `","encounter_id":"enc-created","payload":{"encounter":"enc-created"}}`)
	at := time.Now()
	r := b.srv.Do("POST", "/queue", create, taskhttptest.SignedAt(at))
	require.Equal(t, 201, r.Status, string(r.Body))
	b.claim(t, "vm-1", id)
	before := b.snapshot(t)

	for _, path := range []string{"/ack", "/fail", "/webhook/ack", "/webhook/fail", "/queue"} {
		env := b.srv.Do("POST", path, create, taskhttptest.SignedAt(at)).Error(t, 401, contracts.CodeUnauthorized)
		require.Equal(t, "replayed", env.Error.Details["reason"], path)
	}
	require.Equal(t, before, b.snapshot(t), "the replays changed the ledger")
	got := b.get(t, id)
	require.Equal(t, contracts.StatusProcessing, got.Status)
	require.Equal(t, "vm-1", got.WorkerID)
	require.Empty(t, b.follower.Calls())
}
