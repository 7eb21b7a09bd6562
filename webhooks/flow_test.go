package webhooks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

// TestStateDiagram walks every edge of the seed's diagram over signed HTTP:
//
//	PENDING → PROCESSING → DONE
//	              ↓
//	            ERROR → (attempts < max) → PENDING (HIGH) → PROCESSING
//	              ↓
//	            ERROR → (attempts >= max) → DLQ → replay → PENDING
//
// and the illegal moves next to them.
func TestStateDiagram(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// PENDING → PROCESSING → DONE.
	done := b.create(t, "enc-done")
	b.claim(t, "vm-1", done.QueueID)
	ack := `{"queue_id":"` + done.QueueID + `","encounter_id":"enc-done","experityActions":{"visit":{"codes":["J06.9"]},"charges":[]},"worker_id":"vm-1"}`
	resp, r := b.hook(t, "/ack", ack)
	taskhttptest.Golden(t, "webhook_ack", r.Body)
	require.Equal(t, contracts.WebhookResponse{Success: true, QueueID: done.QueueID, Status: contracts.StatusDone,
		Message: "Task acknowledged"}, resp)
	got := b.get(t, done.QueueID)
	require.Equal(t, contracts.StatusDone, got.Status)
	require.JSONEq(t, `{"experityActions":{"visit":{"codes":["J06.9"]},"charges":[]}}`, string(got.ParsedPayload))

	// The same ACK again (other spacing and key order, n8n's path): a duplicate.
	again := `{"queue_id":"` + done.QueueID + `", "experityActions":{"charges":[], "visit":{"codes":["J06.9"]}}}`
	resp, r = b.hook(t, "/webhook/ack", again)
	taskhttptest.Golden(t, "webhook_ack_duplicate", r.Body)
	require.True(t, resp.Duplicate)
	require.Equal(t, contracts.StatusDone, resp.Status)

	// DONE is final: other experityActions, or a FAIL, conflict.
	before := b.snapshot(t)
	r = b.srv.Do("POST", "/ack", []byte(`{"queue_id":"`+done.QueueID+`","experityActions":{"visit":null}}`))
	env := r.Error(t, 409, contracts.CodeConflict)
	taskhttptest.Golden(t, "error_conflict_ack_done", r.Body)
	require.Equal(t, "DONE", env.Error.Details["current_status"])
	require.Equal(t, "different_payload", env.Error.Details["reason"])
	env = b.srv.Do("POST", "/fail", []byte(`{"queue_id":"`+done.QueueID+`","error_message":"late"}`)).Error(t, 409, contracts.CodeConflict)
	require.Equal(t, "DONE", env.Error.Details["current_status"])
	require.Equal(t, before, b.snapshot(t))

	// PROCESSING → ERROR → PENDING (HIGH) → PROCESSING, until the dead letter.
	task := b.create(t, "enc-retry")
	require.Equal(t, contracts.PriorityNormal, task.Priority)
	fail := `{"queue_id":"` + task.QueueID + `","encounter_id":"enc-retry","error_message":"Experity portal timeout"}`
	for attempt := 1; attempt < contracts.DefaultMaxAttempts; attempt++ {
		b.claim(t, "vm-2", task.QueueID)
		resp, r = b.hook(t, "/fail", fail)
		if attempt == 1 {
			taskhttptest.Golden(t, "webhook_fail_requeued", r.Body)
		}
		require.Equal(t, contracts.StatusError, resp.Status)
		require.Equal(t, attempt, resp.Attempts)
		require.True(t, resp.Requeued)
		require.False(t, resp.DLQ)
		require.Contains(t, resp.Message, "requeued with HIGH priority")

		// ERROR, awaiting the retry: the same FAIL resent (the worker timed
		// out) is a duplicate that changes nothing, an ACK conflicts, and
		// nothing can be claimed.
		before := b.snapshot(t)
		dup, _ := b.hook(t, "/fail", fail)
		require.True(t, dup.Duplicate)
		require.Equal(t, attempt, dup.Attempts)
		require.True(t, dup.Requeued)
		env := b.srv.Do("POST", "/ack", []byte(`{"queue_id":"`+task.QueueID+`"}`)).Error(t, 409, contracts.CodeConflict)
		require.Equal(t, "ERROR", env.Error.Details["current_status"])
		require.Equal(t, 204, b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-3"}`)).Status)
		require.Equal(t, before, b.snapshot(t))

		// The scheduled requeue comes: PENDING, HIGH.
		b.follower.Due(t)
		got := b.get(t, task.QueueID)
		require.Equal(t, contracts.StatusPending, got.Status)
		require.Equal(t, contracts.PriorityHigh, got.Priority)
		require.Equal(t, attempt, got.Attempts)

		// A FAIL of a PENDING task conflicts.
		r = b.srv.Do("POST", "/webhook/fail", []byte(fail))
		env = r.Error(t, 409, contracts.CodeConflict)
		require.Equal(t, "PENDING", env.Error.Details["current_status"])
		if attempt == 1 {
			taskhttptest.Golden(t, "error_conflict_fail_pending", r.Body)
		}
	}

	// The last attempt fails: a dead letter, with the seed's message.
	b.claim(t, "vm-2", task.QueueID)
	resp, r = b.hook(t, "/webhook/fail", fail)
	taskhttptest.Golden(t, "webhook_fail_dlq", r.Body)
	require.Equal(t, contracts.WebhookResponse{Success: true, QueueID: task.QueueID, Status: contracts.StatusError,
		Attempts: contracts.DefaultMaxAttempts, DLQ: true, Message: contracts.DLQErrorMessage}, resp)
	got = b.get(t, task.QueueID)
	require.True(t, got.InDLQ())
	require.JSONEq(t, `{"dlq":true}`, string(got.ParsedPayload))
	require.Equal(t, contracts.DLQErrorMessage, got.ErrorMessage)
	calls := b.follower.Calls()
	firsts := 0
	for _, c := range calls {
		if !c.Duplicate {
			firsts++
		}
	}
	require.Equal(t, contracts.DefaultMaxAttempts, firsts, "one follow-up per FAIL, plus one per resent duplicate")
	require.True(t, calls[len(calls)-1].DLQ)
	st, err := b.ledger.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.DLQ)
	require.Equal(t, 0, st.RetryWaiting)

	// Nothing left to claim: 204.
	r = b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-2"}`))
	require.Equal(t, 204, r.Status, string(r.Body))

	// Replay: PENDING with attempts 0, through the Replayer; then it can finish.
	r = b.srv.Do("POST", "/queue/"+task.QueueID+"/replay", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	var replayed contracts.TaskResponse
	r.Decode(t, &replayed)
	require.Equal(t, contracts.StatusPending, replayed.Task.Status)
	require.Zero(t, replayed.Task.Attempts)
	require.False(t, replayed.Task.InDLQ())
	require.Equal(t, []string{task.QueueID}, b.replayer.Calls())
	b.claim(t, "vm-4", task.QueueID)
	resp, _ = b.hook(t, "/ack", `{"queue_id":"`+task.QueueID+`","experityActions":{}}`)
	require.Equal(t, contracts.StatusDone, resp.Status)
	require.Zero(t, resp.Attempts)

	// A late ACK of a task that is PENDING again (recovered by a sweep) is
	// accepted: the work is done.
	late := b.create(t, "enc-late")
	resp, _ = b.hook(t, "/ack", `{"queue_id":"`+late.QueueID+`","experityActions":null}`)
	require.Equal(t, contracts.StatusDone, resp.Status)
}

// The worker and encounter named in a webhook must be the task's.
func TestWebhookIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1")
	b.claim(t, "vm-1", task.QueueID)
	before := b.snapshot(t)

	// Another encounter: 400 (a client bug), not 409 (see the package doc).
	r := b.srv.Do("POST", "/ack", []byte(`{"queue_id":"`+task.QueueID+`","encounter_id":"enc-2","experityActions":{}}`))
	env := r.Error(t, 400, contracts.CodeInvalid)
	taskhttptest.Golden(t, "error_encounter_mismatch", r.Body)
	require.Equal(t, "encounter_id", env.Error.Details["field"])
	r = b.srv.Do("POST", "/fail", []byte(`{"queue_id":"`+task.QueueID+`","encounter_id":"enc-2","error_message":"x"}`))
	r.Error(t, 400, contracts.CodeInvalid)

	// Another worker: 409 with the holder.
	for _, path := range []string{"/ack", "/fail"} {
		env := b.srv.Do("POST", path, []byte(`{"queue_id":"`+task.QueueID+`","worker_id":"vm-9"}`)).Error(t, 409, contracts.CodeConflict)
		require.Equal(t, "wrong_worker", env.Error.Details["reason"])
		require.Equal(t, "vm-1", env.Error.Details["worker_id"])
		require.Equal(t, "PROCESSING", env.Error.Details["current_status"])
	}
	require.Equal(t, before, b.snapshot(t))
	require.Empty(t, b.follower.Calls())
}
