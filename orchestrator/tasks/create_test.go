package tasks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
)

func TestCreateIdempotentOnQueueID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := "6F1C8A52-3F0E-4D7E-9A51-0C3B2F4F9A10" // upper case: the same task as its lower-case form
	req := contracts.CreateTaskRequest{QueueID: id, EncounterID: "enc-1", Payload: json.RawMessage(`{"a":1,"b":2}`)}
	first, err := b.l.Create(b.ctx, req)
	require.NoError(t, err)
	require.False(t, first.Duplicate)
	require.Equal(t, strings.ToLower(id), first.Task.QueueID)
	require.JSONEq(t, `{"a":1,"b":2}`, string(first.Task.Payload))
	require.Equal(t, first.Task, noHistory(b.get(t, id)), "what Create returns is what is stored")

	// Replayed (even with other spacing and key order, after the task moved on): the same task.
	b.claimOne(t, "vm-1")
	req.Payload = json.RawMessage(`{ "b": 2, "a": 1 }`)
	again, err := b.l.Create(b.ctx, req)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, contracts.StatusProcessing, again.Task.Status)

	// Same queue_id, other content: a conflict, for the whole batch.
	other := contracts.CreateTaskRequest{EncounterID: "enc-2"}
	_, err = b.l.CreateBatch(b.ctx, []contracts.CreateTaskRequest{other,
		{QueueID: id, EncounterID: "enc-1", Payload: json.RawMessage(`{"a":2}`)}})
	e := conflictError(t, err, strings.ToLower(id), contracts.StatusProcessing)
	require.Equal(t, "queue_id_reused", e.Details["reason"])
	_, err = b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: "enc-9", Payload: req.Payload})
	requireConflict(t, err, strings.ToLower(id), contracts.StatusProcessing)
	page, err := b.l.List(b.ctx, contracts.ListQuery{EncounterID: "enc-2"})
	require.NoError(t, err)
	require.Empty(t, page.Tasks, "a failed batch writes nothing")
}

// While a task of an encounter is open (PENDING, PROCESSING, ERROR awaiting
// a retry) creating another answers the open one; once DONE or a dead
// letter, a new task is created.
func TestCreateIdempotentOnEncounter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.create(t, "enc-1", "")
	dupOf := func(want string) {
		t.Helper()
		res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-1", Payload: json.RawMessage(`{"v":2}`)})
		require.NoError(t, err)
		require.True(t, res.Duplicate)
		require.Equal(t, want, res.Task.QueueID)
		require.JSONEq(t, `{"encounter":"enc-1"}`, string(res.Task.Payload), "the open task's payload is not replaced")
	}
	dupOf(first.QueueID) // PENDING
	b.claimOne(t, "vm-1")
	dupOf(first.QueueID) // PROCESSING
	_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: first.QueueID})
	require.NoError(t, err)
	dupOf(first.QueueID) // ERROR awaiting retry
	_, err = b.l.Requeue(b.ctx, first.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	b.claimOne(t, "vm-1")
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: first.QueueID})
	require.NoError(t, err)

	second := b.create(t, "enc-1", "") // DONE closes the encounter
	require.NotEqual(t, first.QueueID, second.QueueID)
	dupOf(second.QueueID)
	_, err = b.l.MoveToDLQ(b.ctx, second.QueueID, "")
	require.NoError(t, err)
	third := b.create(t, "enc-1", "") // so does the DLQ

	// The dead letter cannot be replayed while the newer task is open.
	_, err = b.l.Replay(b.ctx, second.QueueID, contracts.RequeueRequest{})
	e := conflictError(t, err, second.QueueID, contracts.StatusError)
	require.Equal(t, "encounter_open", e.Details["reason"])
	require.Equal(t, third.QueueID, e.Details["open_queue_id"])
	_, err = b.l.UpdateStatus(b.ctx, second.QueueID, contracts.StatusUpdateRequest{Status: contracts.StatusPending})
	requireConflict(t, err, second.QueueID, contracts.StatusError)

	b.claimOne(t, "vm-1")
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: third.QueueID})
	require.NoError(t, err)
	replayed, err := b.l.Replay(b.ctx, second.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, replayed.Status)
	dupOf(second.QueueID)

	// Encounter-less tasks are idempotent on queue_id only.
	a, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{Payload: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	c, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{Payload: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	require.NotEqual(t, a.Task.QueueID, c.Task.QueueID)
	page, err := b.l.List(b.ctx, contracts.ListQuery{EncounterID: "enc-1"})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 3)
}

func TestCreateBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reqs := make([]contracts.CreateTaskRequest, contracts.MaxBatchCreate)
	for i := range reqs {
		reqs[i] = contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i%250), MaxAttempts: 5,
			Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	res, err := b.l.CreateBatch(b.ctx, reqs)
	require.NoError(t, err)
	require.Len(t, res, 500)
	for i, r := range res {
		if i < 250 {
			require.False(t, r.Duplicate, i)
			require.Equal(t, 5, r.Task.MaxAttempts)
		} else {
			require.True(t, r.Duplicate, "same encounter as #%d earlier in the batch", i-250)
			require.Equal(t, res[i-250].Task.QueueID, r.Task.QueueID)
		}
	}
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 250, st.ByStatus[contracts.StatusPending])
	require.Equal(t, 250, st.PendingByPriority[contracts.PriorityNormal])

	_, err = b.l.CreateBatch(b.ctx, append(reqs, contracts.CreateTaskRequest{}))
	requireCode(t, err, contracts.CodeInvalid)
	_, err = b.l.CreateBatch(b.ctx, nil)
	requireCode(t, err, contracts.CodeInvalid)

	bad := []contracts.CreateTaskRequest{{EncounterID: "x"}, {EncounterID: "y", Priority: "URGENT"}}
	_, err = b.l.CreateBatch(b.ctx, bad)
	e := codeError(t, err, contracts.CodeInvalid)
	require.Equal(t, 1, e.Details["index"])
	require.Equal(t, "priority", e.Details["field"])

	id := "0d6a3c4e-1b2f-4a5c-8d9e-0f1a2b3c4d5e"
	_, err = b.l.CreateBatch(b.ctx, []contracts.CreateTaskRequest{{QueueID: id, EncounterID: "p"}, {QueueID: id, EncounterID: "q"}})
	requireCode(t, err, contracts.CodeInvalid)
	res, err = b.l.CreateBatch(b.ctx, []contracts.CreateTaskRequest{{QueueID: id, EncounterID: "p"}, {QueueID: id, EncounterID: "p"}})
	require.NoError(t, err)
	require.False(t, res[0].Duplicate)
	require.True(t, res[1].Duplicate)

	for name, req := range map[string]contracts.CreateTaskRequest{
		"queue_id":      {QueueID: "nope"},
		"max_attempts":  {MaxAttempts: 101},
		"negative max":  {MaxAttempts: -1},
		"payload":       {Payload: json.RawMessage(`{"a":`)},
		"encounter len": {EncounterID: strings.Repeat("e", 257)},
		"encounter ctl": {EncounterID: "a\nb"},
	} {
		_, err := b.l.Create(b.ctx, req)
		requireCode(t, err, contracts.CodeInvalid)
		_ = name
	}
}

func noHistory(t contracts.Task) contracts.Task {
	t.History = nil
	return t
}
