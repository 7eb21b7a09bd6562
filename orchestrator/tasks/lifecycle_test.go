package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
)

// PENDING → PROCESSING → DONE, with experityActions stored as given.
func TestLifecycleDone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-1", "")
	require.Equal(t, contracts.StatusPending, created.Status)
	require.Equal(t, contracts.PriorityNormal, created.Priority)
	require.Equal(t, 3, created.MaxAttempts)
	require.Equal(t, t0, created.CreatedAt)
	require.Nil(t, created.ClaimedAt)
	require.JSONEq(t, `{"encounter":"enc-1"}`, string(created.Payload))

	claimedAt := b.clock.Advance(time.Second)
	task := b.claimOne(t, "vm-1")
	require.Equal(t, created.QueueID, task.QueueID)
	require.Equal(t, contracts.StatusProcessing, task.Status)
	require.Equal(t, "vm-1", task.WorkerID)
	require.Equal(t, claimedAt, *task.ClaimedAt)
	require.Equal(t, claimedAt, *task.HeartbeatAt)
	require.JSONEq(t, `{"encounter":"enc-1"}`, string(task.Payload), "workers get the payload")

	beat := b.clock.Advance(30 * time.Second)
	task, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
	require.NoError(t, err)
	require.Equal(t, beat, *task.HeartbeatAt)
	require.Equal(t, claimedAt, *task.ClaimedAt, "a heartbeat does not move claimed_at")

	done := b.clock.Advance(time.Second)
	actions := `{"codes":["99213"],"notes":[],"big":12345678901234567890}`
	res, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: task.QueueID, EncounterID: "enc-1", ExperityActions: json.RawMessage(actions)})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, contracts.StatusDone, res.Task.Status)
	require.Equal(t, done, res.Task.UpdatedAt)
	// Raw JSON survives: empty arrays stay arrays, big numbers keep every digit.
	require.JSONEq(t, `{"experityActions":`+actions+`}`, string(res.Task.ParsedPayload))
	require.Contains(t, string(res.Task.ParsedPayload), `12345678901234567890`)

	got := b.get(t, task.QueueID)
	require.Equal(t, res.Task.ParsedPayload, got.ParsedPayload)
	require.Equal(t, []string{">PENDING", "PENDING>PROCESSING", "PROCESSING>DONE"}, statusesOf(got.History))
	require.Equal(t, "vm-1", got.History[1].By)
	require.Equal(t, "vm-1", got.History[2].By)
	require.Equal(t, done, got.History[2].At)

	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.ByStatus[contracts.StatusDone])
	require.Equal(t, 1, st.Total)
}

// PROCESSING → ERROR → PENDING (HIGH) → PROCESSING → DONE.
func TestLifecycleFailRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-1", contracts.PriorityLow)
	b.claimOne(t, "vm-1")

	fail, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, EncounterID: "enc-1", ErrorMessage: "session lost"})
	require.NoError(t, err)
	require.True(t, fail.Retry)
	require.False(t, fail.DLQ)
	require.Equal(t, contracts.StatusError, fail.Task.Status)
	require.Equal(t, 1, fail.Task.Attempts)
	require.Equal(t, "session lost", fail.Task.ErrorMessage)
	require.False(t, fail.Task.InDLQ())

	// the caller schedules the requeue (through Asynq, with backoff) …
	b.clock.Advance(10 * time.Second)
	out, err := b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.False(t, out.Noop)
	require.Equal(t, contracts.StatusPending, out.Task.Status)
	require.Equal(t, contracts.PriorityHigh, out.Task.Priority, "requeued tasks are HIGH by default")
	require.Empty(t, out.Task.WorkerID)
	require.Nil(t, out.Task.ClaimedAt)
	require.Equal(t, 1, out.Task.Attempts)

	// … and a replay of that requeue changes nothing.
	again, err := b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{Priority: contracts.PriorityLow})
	require.NoError(t, err)
	require.True(t, again.Noop)
	require.Contains(t, again.Message, "already PENDING")
	require.Equal(t, contracts.PriorityHigh, again.Task.Priority)

	task := b.claimOne(t, "vm-2")
	require.Equal(t, "vm-2", task.WorkerID)
	again, err = b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.True(t, again.Noop, "a requeue replayed after the next claim is a no-op too")
	require.Equal(t, contracts.StatusProcessing, again.Task.Status)

	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, WorkerID: "vm-2", ExperityActions: json.RawMessage(`[]`)})
	require.NoError(t, err)
	got := b.get(t, created.QueueID)
	require.Equal(t, []string{">PENDING", "PENDING>PROCESSING", "PROCESSING>ERROR", "ERROR>PENDING", "PENDING>PROCESSING",
		"PROCESSING>DONE"}, statusesOf(got.History))
	require.Equal(t, "session lost", got.History[2].Reason)
}

// ERROR → DLQ at max_attempts, then a replay brings it back.
func TestLifecycleDLQAndReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-1", "")
	for attempt := 1; attempt <= 3; attempt++ {
		b.claimOne(t, "vm-1")
		res, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, ErrorMessage: "boom"})
		require.NoError(t, err)
		require.Equal(t, attempt, res.Task.Attempts)
		if attempt < 3 {
			require.True(t, res.Retry)
			_, err = b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
			require.NoError(t, err)
			continue
		}
		require.False(t, res.Retry)
		require.True(t, res.DLQ)
		require.Equal(t, contracts.StatusError, res.Task.Status)
		require.Equal(t, "Max retry attempts exceeded. Moved to Dead Letter Queue.", res.Task.ErrorMessage)
		require.Equal(t, map[string]any{"dlq": true}, parsed(t, res.Task))
		require.True(t, res.Task.InDLQ())
	}
	got := b.get(t, created.QueueID)
	require.Contains(t, got.History[len(got.History)-1].Reason, "boom", "the worker's message is kept in history")

	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.DLQ)
	require.Equal(t, 0, st.RetryWaiting)

	// A requeue (the retry path) must not revive a dead letter.
	_, err = b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
	e := conflictError(t, err, created.QueueID, contracts.StatusError)
	require.Equal(t, true, e.Details["dlq"])

	page, err := b.l.List(b.ctx, contracts.ListQuery{DLQ: true})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1)

	replayed, err := b.l.Replay(b.ctx, created.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, replayed.Status)
	require.Equal(t, contracts.PriorityHigh, replayed.Priority)
	require.Equal(t, 0, replayed.Attempts)
	require.Nil(t, replayed.ParsedPayload, "the dlq flag is cleared")
	require.False(t, replayed.InDLQ())

	_, err = b.l.Replay(b.ctx, created.QueueID, contracts.RequeueRequest{})
	requireConflict(t, err, created.QueueID, contracts.StatusPending)

	task := b.claimOne(t, "vm-9")
	require.Equal(t, created.QueueID, task.QueueID)
	st, err = b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 0, st.DLQ)
	require.Equal(t, 1, st.ByStatus[contracts.StatusProcessing])
}

// The n8n workflow drives the same diagram through PATCH /queue/{id}/status.
func TestUpdateStatusWorkflowPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-1", "")
	id := created.QueueID

	task, err := b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: "processing", WorkerID: "vm-legacy"})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusProcessing, task.Status)
	require.Equal(t, "vm-legacy", task.WorkerID)
	require.NotNil(t, task.ClaimedAt)

	msg := "Experity timeout"
	task, err = b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusError, ErrorMessage: &msg, IncrementAttempts: true})
	require.NoError(t, err)
	require.Equal(t, 1, task.Attempts)
	require.Equal(t, msg, task.ErrorMessage)
	require.False(t, task.InDLQ())

	// The workflow's "Move to Dead Letter Queue" step.
	dlqMsg := contracts.DLQErrorMessage
	task, err = b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusError, ErrorMessage: &dlqMsg,
		ParsedPayload: json.RawMessage(`{"dlq":true,"note":"manual review"}`)})
	require.NoError(t, err)
	require.True(t, task.InDLQ())
	require.Equal(t, map[string]any{"dlq": true, "note": "manual review"}, parsed(t, task))
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.DLQ)

	// dlq:true needs ERROR.
	_, err = b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusPending, ParsedPayload: json.RawMessage(`{"dlq":true}`)})
	requireCode(t, err, contracts.CodeInvalid)

	// A dead letter leaves the DLQ by Replay only (see TestUpdateStatusKeepsDeadLetters).
	task, err = b.l.Replay(b.ctx, id, contracts.RequeueRequest{Priority: contracts.PriorityNormal})
	require.NoError(t, err)
	require.False(t, task.InDLQ())
	require.Equal(t, 0, task.Attempts)
	require.Equal(t, contracts.PriorityNormal, task.Priority)
	require.Equal(t, map[string]any{"note": "manual review"}, parsed(t, task))

	b.claimOne(t, "vm-2")
	task, err = b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusDone,
		ParsedPayload: json.RawMessage(`{"experityActions": {"a": 1, "b": [1, 2]}}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusDone, task.Status)
	// Actions stored through PATCH count for a later duplicate ACK.
	res, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id, ExperityActions: json.RawMessage(`{"b":[1,2],"a":1}`)})
	require.NoError(t, err)
	require.True(t, res.Duplicate)

	got := b.get(t, id)
	require.Equal(t, "api", got.History[len(got.History)-1].By)
}

// PATCH status may amend a dead letter but not take it out of the DLQ: that
// is Replay's, whose caller also removes the archived Asynq task and the
// durable dead-letter record.
func TestUpdateStatusKeepsDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-1", MaxAttempts: 1})
	require.NoError(t, err)
	id := res.Task.QueueID
	b.claimOne(t, "vm-1")
	fail, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, ErrorMessage: "portal down"})
	require.NoError(t, err)
	require.True(t, fail.DLQ)

	msg := "needs a human"
	for name, req := range map[string]contracts.StatusUpdateRequest{
		"to PENDING":                 {Status: contracts.StatusPending},
		"to PENDING, parsed_payload": {Status: contracts.StatusPending, ParsedPayload: json.RawMessage(`{"note":"x"}`)},
		"dlq false":                  {Status: contracts.StatusError, ParsedPayload: json.RawMessage(`{"dlq":false}`)},
		"parsed_payload sans dlq":    {Status: contracts.StatusError, ParsedPayload: json.RawMessage(`{"note":"x"}`), ErrorMessage: &msg},
		"parsed_payload null":        {Status: contracts.StatusError, ParsedPayload: json.RawMessage(`null`)},
	} {
		before := b.get(t, id)
		b.clock.Advance(time.Second)
		_, err := b.l.UpdateStatus(b.ctx, id, req)
		e := conflictError(t, err, id, contracts.StatusError)
		require.Equal(t, "dead_letter", e.Details["reason"], name)
		require.Equal(t, true, e.Details["dlq"], name)
		require.Contains(t, e.Message, "POST /queue/"+id+"/replay", name)
		require.Equal(t, before, b.get(t, id), "%s changed the task", name)
	}

	// Amendments that keep it a dead letter are fine.
	task, err := b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusError, ErrorMessage: &msg})
	require.NoError(t, err)
	require.True(t, task.InDLQ())
	require.Equal(t, msg, task.ErrorMessage)
	task, err = b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusError,
		ParsedPayload: json.RawMessage(`{"dlq":true,"note":"called the clinic"}`)})
	require.NoError(t, err)
	require.True(t, task.InDLQ())
	require.Equal(t, map[string]any{"dlq": true, "note": "called the clinic"}, parsed(t, task))
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.DLQ)

	replayed, err := b.l.Replay(b.ctx, id, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, replayed.Status)
}

func TestMoveToDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pending := b.create(t, "enc-1", contracts.PriorityLow)
	out, err := b.l.MoveToDLQ(b.ctx, pending.QueueID, "")
	require.NoError(t, err)
	require.False(t, out.Noop)
	require.True(t, out.Task.InDLQ())
	require.Equal(t, contracts.DLQErrorMessage, out.Task.ErrorMessage)
	require.Equal(t, 0, out.Task.Attempts)

	out, err = b.l.MoveToDLQ(b.ctx, pending.QueueID, "again")
	require.NoError(t, err)
	require.True(t, out.Noop)
	require.Equal(t, contracts.DLQErrorMessage, out.Task.ErrorMessage)

	// The encounter is closed: a new task for it may be created.
	again := b.create(t, "enc-1", "")
	require.NotEqual(t, pending.QueueID, again.QueueID)
	b.claimOne(t, "vm-1")
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: again.QueueID})
	require.NoError(t, err)
	_, err = b.l.MoveToDLQ(b.ctx, again.QueueID, "no")
	requireConflict(t, err, again.QueueID, contracts.StatusDone)

	claimed := b.create(t, "enc-2", "")
	b.claimOne(t, "vm-1")
	out, err = b.l.MoveToDLQ(b.ctx, claimed.QueueID, "needs review")
	require.NoError(t, err)
	require.Equal(t, "needs review", out.Task.ErrorMessage)
	require.True(t, out.Task.InDLQ())
}

// A late ACK of a task a sweep put back to PENDING is accepted: the work
// was done, and doing it again would repeat its effects.
func TestLateAckOfRecoveredTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-1", "")
	b.claimOne(t, "vm-slow")
	res, err := b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, []string{created.QueueID}, res.Recovered)

	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, ExperityActions: json.RawMessage(`{"ok":true}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusDone, ack.Task.Status)
	got := b.get(t, created.QueueID)
	require.Contains(t, got.History[len(got.History)-1].Reason, "late acknowledgement")
	claimed, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-2"})
	require.NoError(t, err)
	require.Empty(t, claimed, "the task is no longer pending")
}

func TestDuplicateAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-1", "")
	b.claimOne(t, "vm-1")
	first, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, ExperityActions: json.RawMessage(`{"a":1,"b":[true,null]}`)})
	require.NoError(t, err)
	history := len(b.get(t, created.QueueID).History)

	// Same actions, other spacing and key order: a duplicate, nothing changes.
	b.clock.Advance(time.Minute)
	dup, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, EncounterID: "enc-1",
		ExperityActions: json.RawMessage(`{ "b": [true, null], "a": 1 }`)})
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	require.Equal(t, first.Task.UpdatedAt, dup.Task.UpdatedAt)
	require.Len(t, b.get(t, created.QueueID).History, history)

	// Different actions: a conflict, never a silent overwrite.
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, ExperityActions: json.RawMessage(`{"a":2}`)})
	e := conflictError(t, err, created.QueueID, contracts.StatusDone)
	require.Equal(t, "different_payload", e.Details["reason"])
	require.JSONEq(t, string(first.Task.ParsedPayload), string(b.get(t, created.QueueID).ParsedPayload))
}

// AckBrief makes the same transition as Ack and answers the fields the ACK
// webhook reports; a duplicate and a conflict answer as Ack's do.
func TestAckBrief(t *testing.T) {
	b := setup(t)
	task := b.create(t, "enc-brief", contracts.PriorityHigh)
	claimed := b.claimOne(t, "vm-1")
	require.Equal(t, task.QueueID, claimed.QueueID)
	req := contracts.AckRequest{QueueID: task.QueueID, EncounterID: "enc-brief", WorkerID: "vm-1",
		ExperityActions: json.RawMessage(`{"codes":["99213"]}`)}
	res, err := b.l.AckBrief(b.ctx, req)
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, task.QueueID, res.Task.QueueID)
	require.Equal(t, "enc-brief", res.Task.EncounterID)
	require.Equal(t, contracts.StatusDone, res.Task.Status)
	require.Equal(t, contracts.PriorityHigh, res.Task.Priority)
	require.Equal(t, "vm-1", res.Task.WorkerID)
	require.Nil(t, res.Task.Payload, "no payload in a brief answer")
	stored := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusDone, stored.Status)
	require.JSONEq(t, `{"experityActions":{"codes":["99213"]}}`, string(stored.ParsedPayload))

	again, err := b.l.AckBrief(b.ctx, req)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	req.ExperityActions = json.RawMessage(`{"codes":["other"]}`)
	_, err = b.l.AckBrief(b.ctx, req)
	requireCode(t, err, contracts.CodeConflict)
	_, err = b.l.AckBrief(b.ctx, contracts.AckRequest{QueueID: task.QueueID, EncounterID: "enc-other"})
	requireCode(t, err, contracts.CodeInvalid)
}
