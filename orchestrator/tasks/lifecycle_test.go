package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
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
	e := requireConflict(t, err, created.QueueID, contracts.StatusError)
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
		e := requireConflict(t, err, id, contracts.StatusError)
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
	e := requireConflict(t, err, created.QueueID, contracts.StatusDone)
	require.Equal(t, "different_payload", e.Details["reason"])
	require.JSONEq(t, string(first.Task.ParsedPayload), string(b.get(t, created.QueueID).ParsedPayload))
}

// Every illegal transition answers a conflict with the current status and
// leaves the task exactly as it was.
func TestIllegalTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pending := b.create(t, "enc-pending", contracts.PriorityLow)
	processing := b.create(t, "enc-processing", contracts.PriorityHigh)
	require.Equal(t, processing.QueueID, b.claimOne(t, "vm-1").QueueID)
	errored := b.create(t, "enc-error", contracts.PriorityHigh)
	b.claimOne(t, "vm-2")
	_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: errored.QueueID, ErrorMessage: "x"})
	require.NoError(t, err)
	done := b.create(t, "enc-done", contracts.PriorityHigh)
	b.claimOne(t, "vm-3")
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: done.QueueID, ExperityActions: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	dead, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-dead", Priority: contracts.PriorityHigh, MaxAttempts: 1})
	require.NoError(t, err)
	b.claimOne(t, "vm-4")
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: dead.Task.QueueID, ErrorMessage: "x"})
	require.NoError(t, err)

	st := func(s contracts.Status) contracts.StatusUpdateRequest {
		return contracts.StatusUpdateRequest{Status: s}
	}
	cases := []struct {
		name   string
		id     string
		status contracts.Status
		call   func(id string) error
		reason string
	}{
		{"ack DONE other actions", done.QueueID, contracts.StatusDone, func(id string) error {
			_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id, ExperityActions: json.RawMessage(`{"x":2}`)})
			return err
		}, "different_payload"},
		{"ack ERROR", errored.QueueID, contracts.StatusError, func(id string) error {
			_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id})
			return err
		}, "not_processing"},
		{"ack dead letter", dead.Task.QueueID, contracts.StatusError, func(id string) error {
			_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id})
			return err
		}, "not_processing"},
		{"ack by another worker", processing.QueueID, contracts.StatusProcessing, func(id string) error {
			_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id, WorkerID: "vm-other"})
			return err
		}, "wrong_worker"},
		{"fail PENDING", pending.QueueID, contracts.StatusPending, func(id string) error {
			_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, ErrorMessage: "x"})
			return err
		}, "not_processing"},
		{"fail DONE", done.QueueID, contracts.StatusDone, func(id string) error {
			_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id})
			return err
		}, "not_processing"},
		{"fail ERROR (replayed FAIL)", errored.QueueID, contracts.StatusError, func(id string) error {
			_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id})
			return err
		}, "not_processing"},
		{"fail by another worker", processing.QueueID, contracts.StatusProcessing, func(id string) error {
			_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, WorkerID: "vm-other"})
			return err
		}, "wrong_worker"},
		{"claim a claimed task", processing.QueueID, contracts.StatusProcessing, func(id string) error {
			_, err := b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusProcessing, WorkerID: "vm-other"})
			return err
		}, "illegal_transition"},
		{"heartbeat by another worker", processing.QueueID, contracts.StatusProcessing, func(id string) error {
			_, err := b.l.Heartbeat(b.ctx, id, contracts.HeartbeatRequest{WorkerID: "vm-other"})
			return err
		}, "wrong_worker"},
		{"heartbeat PENDING", pending.QueueID, contracts.StatusPending, func(id string) error {
			_, err := b.l.Heartbeat(b.ctx, id, contracts.HeartbeatRequest{WorkerID: "vm-1"})
			return err
		}, "not_processing"},
		{"heartbeat DONE", done.QueueID, contracts.StatusDone, func(id string) error {
			_, err := b.l.Heartbeat(b.ctx, id, contracts.HeartbeatRequest{WorkerID: "vm-3"})
			return err
		}, "not_processing"},
		{"requeue DONE", done.QueueID, contracts.StatusDone, func(id string) error {
			_, err := b.l.Requeue(b.ctx, id, contracts.RequeueRequest{})
			return err
		}, "done"},
		{"requeue dead letter", dead.Task.QueueID, contracts.StatusError, func(id string) error {
			_, err := b.l.Requeue(b.ctx, id, contracts.RequeueRequest{})
			return err
		}, "dlq"},
		{"replay ERROR awaiting retry", errored.QueueID, contracts.StatusError, func(id string) error {
			_, err := b.l.Replay(b.ctx, id, contracts.RequeueRequest{})
			return err
		}, "not_dlq"},
		{"replay DONE", done.QueueID, contracts.StatusDone, func(id string) error {
			_, err := b.l.Replay(b.ctx, id, contracts.RequeueRequest{})
			return err
		}, "not_dlq"},
	}
	for _, s := range []struct {
		id   string
		from contracts.Status
		to   []contracts.Status
	}{
		{done.QueueID, contracts.StatusDone, contracts.AllStatuses()},
		{pending.QueueID, contracts.StatusPending, []contracts.Status{contracts.StatusPending, contracts.StatusDone, contracts.StatusError}},
		{processing.QueueID, contracts.StatusProcessing, []contracts.Status{contracts.StatusProcessing}},
		{errored.QueueID, contracts.StatusError, []contracts.Status{contracts.StatusProcessing, contracts.StatusDone}},
	} {
		for _, to := range s.to {
			cases = append(cases, struct {
				name   string
				id     string
				status contracts.Status
				call   func(id string) error
				reason string
			}{"PATCH " + string(s.from) + " to " + string(to), s.id, s.from, func(id string) error {
				_, err := b.l.UpdateStatus(b.ctx, id, st(to))
				return err
			}, "illegal_transition"})
		}
	}
	for _, c := range cases {
		before := b.get(t, c.id)
		b.clock.Advance(time.Second)
		e := requireConflict(t, c.call(c.id), c.id, c.status)
		require.Equal(t, c.reason, e.Details["reason"], c.name)
		require.Equal(t, before, b.get(t, c.id), "%s changed the task", c.name)
	}
	// Nothing claimable was disturbed either: the one pending task is next.
	require.Equal(t, pending.QueueID, b.claimOne(t, "vm-5").QueueID)
}

func TestNotFoundAndInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	missing := "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10"
	_, err := b.l.Get(b.ctx, missing)
	requireCode(t, err, contracts.CodeNotFound)
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: missing})
	e := requireCode(t, err, contracts.CodeNotFound)
	require.Equal(t, missing, e.Details["queue_id"])
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: missing})
	requireCode(t, err, contracts.CodeNotFound)
	_, err = b.l.Requeue(b.ctx, missing, contracts.RequeueRequest{})
	requireCode(t, err, contracts.CodeNotFound)
	_, err = b.l.Heartbeat(b.ctx, missing, contracts.HeartbeatRequest{WorkerID: "w"})
	requireCode(t, err, contracts.CodeNotFound)
	_, err = b.l.UpdateStatus(b.ctx, missing, contracts.StatusUpdateRequest{Status: contracts.StatusDone})
	requireCode(t, err, contracts.CodeNotFound)

	created := b.create(t, "enc-1", "")
	b.claimOne(t, "vm-1")
	for name, err := range map[string]error{
		"bad id": func() error { _, err := b.l.Get(b.ctx, "not-a-uuid"); return err }(),
		"bad status": func() error {
			_, err := b.l.UpdateStatus(b.ctx, created.QueueID, contracts.StatusUpdateRequest{Status: "DLQ"})
			return err
		}(),
		"bad priority": func() error {
			_, err := b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{Priority: "URGENT"})
			return err
		}(),
		"no worker":   func() error { _, err := b.l.Claim(b.ctx, contracts.ClaimRequest{}); return err }(),
		"claim limit": func() error { _, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 51}); return err }(),
		"claim wait": func() error {
			_, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", WaitMS: -1})
			return err
		}(),
		"ack bad json": func() error {
			_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, ExperityActions: json.RawMessage(`{`)})
			return err
		}(),
		"ack wrong encounter": func() error {
			_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: created.QueueID, EncounterID: "enc-2"})
			return err
		}(),
		"fail wrong encounter": func() error {
			_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, EncounterID: "enc-2"})
			return err
		}(),
		"parsed_payload not object": func() error {
			_, err := b.l.UpdateStatus(b.ctx, created.QueueID, contracts.StatusUpdateRequest{Status: contracts.StatusDone, ParsedPayload: json.RawMessage(`[1]`)})
			return err
		}(),
		"list limit": func() error { _, err := b.l.List(b.ctx, contracts.ListQuery{Limit: 1001}); return err }(),
		"list cursor": func() error {
			_, err := b.l.List(b.ctx, contracts.ListQuery{Cursor: "garbage"})
			return err
		}(),
	} {
		requireCode(t, err, contracts.CodeInvalid)
		_ = name
	}
	require.Equal(t, contracts.StatusProcessing, b.get(t, created.QueueID).Status, "invalid calls change nothing")

	// Long error messages are truncated, not refused.
	long := make([]byte, 10_000)
	for i := range long {
		long[i] = 'x'
	}
	res, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, ErrorMessage: string(long)})
	require.NoError(t, err)
	require.Len(t, res.Task.ErrorMessage, contracts.MaxErrorMessageBytes)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, cfg := range []tasks.Config{{Prefix: "a{b}"}, {MaxAttempts: -1}, {MaxAttempts: 101}, {HistoryLimit: -1}, {SweepBatch: 20_000}} {
		_, err := tasks.New(b.rdb, cfg)
		require.Error(t, err, "%+v", cfg)
	}
	_, err := tasks.New(nil, tasks.Config{})
	require.Error(t, err)
}

func TestHistoryIsCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.HistoryLimit = 5; c.MaxAttempts = 50 })
	created := b.create(t, "enc-1", "")
	for i := 0; i < 10; i++ {
		b.claimOne(t, "vm-1")
		_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, ErrorMessage: "x"})
		require.NoError(t, err)
		_, err = b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
		require.NoError(t, err)
	}
	got := b.get(t, created.QueueID)
	require.Len(t, got.History, 5)
	require.Equal(t, "ERROR>PENDING", statusesOf(got.History)[4], "the newest events are kept")
}

// RequeueAttempt requeues only the retry of the task's latest FAIL: the
// requeue of an earlier attempt, delivered after the task was requeued,
// claimed and failed again, changes nothing.
func TestRequeueAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", contracts.PriorityNormal)
	b.claimOne(t, "vm-1")
	_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: task.QueueID, ErrorMessage: "first"})
	require.NoError(t, err)
	_, err = b.l.Requeue(b.ctx, task.QueueID, contracts.RequeueRequest{}) // PATCH requeue: no attempts given
	require.NoError(t, err)
	b.claimOne(t, "vm-1")
	b.clock.Advance(time.Second)
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: task.QueueID, ErrorMessage: "second"})
	require.NoError(t, err)

	before := b.get(t, task.QueueID)
	out, err := b.l.RequeueAttempt(b.ctx, task.QueueID, 1, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.True(t, out.Noop)
	require.Equal(t, "task has 2 failed attempts, not the 1 this requeue was scheduled for; requeue changed nothing", out.Message)
	require.Equal(t, contracts.StatusError, out.Task.Status)
	require.Equal(t, before, b.get(t, task.QueueID), "nothing changed")

	out, err = b.l.RequeueAttempt(b.ctx, task.QueueID, 2, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.False(t, out.Noop)
	require.Equal(t, contracts.StatusPending, out.Task.Status)
	require.Equal(t, contracts.PriorityHigh, out.Task.Priority)
	out, err = b.l.RequeueAttempt(b.ctx, task.QueueID, 2, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.True(t, out.Noop, "replayed")
	require.Contains(t, out.Message, "already PENDING")

	_, err = b.l.RequeueAttempt(b.ctx, task.QueueID, -1, contracts.RequeueRequest{})
	requireCode(t, err, contracts.CodeInvalid)
}

// Unclaim gives back an undelivered claim — only while the task is still
// held by that very claim — to its old place, without counting an attempt.
func TestUnclaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.create(t, "enc-a", contracts.PriorityNormal)
	b.clock.Advance(time.Millisecond)
	second := b.create(t, "enc-b", contracts.PriorityNormal)
	claim := b.claimOne(t, "vm-1")
	require.Equal(t, first.QueueID, claim.QueueID)
	at := *claim.ClaimedAt

	for name, c := range map[string]struct {
		worker string
		at     time.Time
	}{
		"another worker":     {"vm-2", at},
		"another claim time": {"vm-1", at.Add(time.Millisecond)},
	} {
		out, err := b.l.Unclaim(b.ctx, first.QueueID, c.worker, c.at)
		require.NoError(t, err, name)
		require.True(t, out.Noop, name)
		require.Contains(t, out.Message, "unclaim changed nothing", name)
		require.Equal(t, contracts.StatusProcessing, out.Task.Status, name)
	}

	b.clock.Advance(time.Second)
	out, err := b.l.Unclaim(b.ctx, first.QueueID, "vm-1", at)
	require.NoError(t, err)
	require.False(t, out.Noop)
	require.Equal(t, contracts.StatusPending, out.Task.Status)
	require.Equal(t, contracts.PriorityNormal, out.Task.Priority)
	require.Zero(t, out.Task.Attempts, "no attempt counted")
	require.Empty(t, out.Task.WorkerID)
	require.Nil(t, out.Task.ClaimedAt)
	require.Nil(t, out.Task.HeartbeatAt)
	last := b.get(t, first.QueueID).History
	require.Equal(t, "vm-1", last[len(last)-1].By)
	require.Contains(t, last[len(last)-1].Reason, "no attempt counted")
	again, err := b.l.Unclaim(b.ctx, first.QueueID, "vm-1", at)
	require.NoError(t, err)
	require.True(t, again.Noop, "once")

	// Back in its old place: ahead of the task created after it.
	claim = b.claimOne(t, "vm-1")
	require.Equal(t, first.QueueID, claim.QueueID)
	stale := *claim.ClaimedAt

	// The race: a sweep recovers the task and another worker claims it
	// before the release of the undelivered claim runs.
	_, err = b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, first.QueueID, b.claimOne(t, "vm-2").QueueID)
	out, err = b.l.Unclaim(b.ctx, first.QueueID, "vm-1", stale)
	require.NoError(t, err)
	require.True(t, out.Noop)
	got := b.get(t, first.QueueID)
	require.Equal(t, contracts.StatusProcessing, got.Status, "left to its new holder")
	require.Equal(t, "vm-2", got.WorkerID)

	// Recovered again and claimed by the same worker: a new claim, also kept.
	_, err = b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, first.QueueID, b.claimOne(t, "vm-1").QueueID)
	out, err = b.l.Unclaim(b.ctx, first.QueueID, "vm-1", stale)
	require.NoError(t, err)
	require.True(t, out.Noop)
	require.Equal(t, contracts.StatusProcessing, b.get(t, first.QueueID).Status)

	_, err = b.l.Unclaim(b.ctx, second.QueueID, "vm-1", at)
	require.NoError(t, err, "a PENDING task: nothing to give back")
	_, err = b.l.Unclaim(b.ctx, "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", "vm-1", at)
	requireCode(t, err, contracts.CodeNotFound)
	_, err = b.l.Unclaim(b.ctx, first.QueueID, "", at)
	requireCode(t, err, contracts.CodeInvalid)
}
