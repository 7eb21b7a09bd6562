package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

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
		e := conflictError(t, c.call(c.id), c.id, c.status)
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
	e := codeError(t, err, contracts.CodeNotFound)
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
	for _, cfg := range []tasks.Config{{KeyPrefix: "a{b}"}, {MaxAttempts: -1}, {MaxAttempts: 101},
		{MaxRecoveries: -1}, {MaxRecoveries: tasks.MaxMaxRecoveries + 1}, {HistoryLimit: -1}, {SweepBatch: 20_000}} {
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

// A FAIL sent again (the worker timed out waiting for the answer) is a
// duplicate: nothing changes, and it says what the first one did. Another
// message, or a FAIL after the task moved on, is still a conflict.
func TestDuplicateFail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.create(t, "enc-dup-fail", "")
	b.claimOne(t, "vm-1")
	req := contracts.FailRequest{QueueID: created.QueueID, WorkerID: "vm-1", ErrorMessage: "portal timeout"}
	first, err := b.l.Fail(b.ctx, req)
	require.NoError(t, err)
	require.True(t, first.Retry)
	require.False(t, first.Duplicate)
	history := len(b.get(t, created.QueueID).History)

	b.clock.Advance(time.Second)
	again, err := b.l.Fail(b.ctx, req)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.True(t, again.Retry)
	require.Equal(t, first.Task.Attempts, again.Task.Attempts, "no second attempt counted")
	require.Equal(t, first.Task.UpdatedAt, again.Task.UpdatedAt)
	require.Len(t, b.get(t, created.QueueID).History, history)

	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, WorkerID: "vm-1", ErrorMessage: "something else"})
	requireConflict(t, err, created.QueueID, contracts.StatusError)
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: created.QueueID, WorkerID: "vm-2", ErrorMessage: "portal timeout"})
	requireConflict(t, err, created.QueueID, contracts.StatusError)

	// After the requeue the FAIL is late, not a duplicate.
	_, err = b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	_, err = b.l.Fail(b.ctx, req)
	requireConflict(t, err, created.QueueID, contracts.StatusPending)

	// The last attempt's FAIL repeated: a duplicate dead letter.
	for i := 0; i < 2; i++ {
		b.claimOne(t, "vm-1")
		res, err := b.l.Fail(b.ctx, req)
		require.NoError(t, err)
		if res.DLQ {
			dup, err := b.l.Fail(b.ctx, req)
			require.NoError(t, err)
			require.True(t, dup.Duplicate)
			require.True(t, dup.DLQ)
			return
		}
		_, err = b.l.Requeue(b.ctx, created.QueueID, contracts.RequeueRequest{})
		require.NoError(t, err)
	}
	t.Fatal("never became a dead letter")
}
