package taskjobs_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/dlq"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
)

// deadLetter makes a dead letter: a task with one attempt, claimed and failed.
func (b *bundle) deadLetter(t *testing.T) contracts.Task {
	t.Helper()
	task := b.create(t, 1, contracts.PriorityNormal)
	res := b.failOnce(t, task.QueueID)
	require.True(t, res.DLQ)
	return res.Task
}

func (b *bundle) requireArchived(t *testing.T, id string) *asynq.TaskInfo {
	t.Helper()
	info, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueLow, id)
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStateArchived, info.State)
	require.Equal(t, taskjobs.TypeReplay, info.Type)
	return info
}

func (b *bundle) requireGone(t *testing.T, id string) {
	t.Helper()
	_, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueLow, id)
	require.ErrorIs(t, err, asynq.ErrTaskNotFound)
	has, err := b.rt.DLQ.Has(b.ctx, asynqrt.QueueLow, id)
	require.NoError(t, err)
	require.False(t, has, "durable record of %s", id)
}

// A FAIL on the last attempt gives the dead letter an archived Asynq task
// (what Asynqmon shows) and a durable record; a second AfterFail adds
// nothing. Running the archived task, as Asynqmon's "Run" does, replays it:
// PENDING, attempts 0, record gone.
func TestDeadLetterIsArchivedAndRunFromAsynqmon(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	dead := b.deadLetter(t)
	require.True(t, dead.InDLQ())
	require.Equal(t, contracts.DLQErrorMessage, dead.ErrorMessage)

	fu, err := b.d.AfterFail(b.ctx, taskFail(dead))
	require.NoError(t, err)
	require.Equal(t, taskjobs.FollowUp{DLQ: true, TaskID: taskjobs.DeadLetterTaskID(dead)}, fu)
	info := b.requireArchived(t, fu.TaskID)
	var p map[string]any
	require.NoError(t, json.Unmarshal(info.Payload, &p))
	require.Equal(t, dead.QueueID, p["queue_id"])
	require.Equal(t, dead.EncounterID, p["encounter_id"])
	require.Equal(t, contracts.DLQErrorMessage, p["error_message"])

	rec, ok, err := b.rt.DLQ.Get(b.ctx, asynqrt.QueueLow, fu.TaskID)
	require.NoError(t, err)
	require.True(t, ok, "durable record")
	require.Equal(t, dlq.SourceTasks, rec.Source)
	require.Equal(t, taskjobs.TypeReplay, rec.Type)
	require.Equal(t, contracts.DLQErrorMessage, rec.Error)
	require.Equal(t, dead.UpdatedAt, rec.FailedAt)

	again, err := b.d.AfterFail(b.ctx, taskFail(dead))
	require.NoError(t, err)
	require.Equal(t, fu, again)
	archived, err := b.rt.Inspector.ListArchivedTasks(asynqrt.QueueLow)
	require.NoError(t, err)
	require.Len(t, archived, 1)
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_tasks_dead_lettered_total", "via", "fail"))
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_dlq_recorded_total", "queue", "low", "source", "tasks"))

	require.NoError(t, b.rt.Start())
	require.NoError(t, b.rt.Inspector.RunTask(asynqrt.QueueLow, fu.TaskID)) // Asynqmon's "Run"
	waitFor(t, asynqWait, "the replay", func() bool { return b.get(t, dead.QueueID).Status == contracts.StatusPending })
	got := b.get(t, dead.QueueID)
	require.Equal(t, 0, got.Attempts)
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.False(t, got.InDLQ())
	waitFor(t, 5*time.Second, "the replay task to finish", func() bool {
		_, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueLow, fu.TaskID)
		return errors.Is(err, asynq.ErrTaskNotFound)
	})
	b.requireGone(t, fu.TaskID)
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_tasks_replayed_total", "via", "asynq"))

	// The next dead-letter episode of the same task gets a task of its own.
	b.clock.Advance(time.Minute)
	res := b.failOnce(t, dead.QueueID)
	require.True(t, res.DLQ)
	next, err := b.d.AfterFail(b.ctx, res)
	require.NoError(t, err)
	require.NotEqual(t, fu.TaskID, next.TaskID)
	b.requireArchived(t, next.TaskID)
}

// POST /queue/{id}/replay goes through Dispatcher.Replay: the ledger replays
// and the archived task and the record go away.
func TestReplayThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	dead := b.deadLetter(t)
	fu, err := b.d.AfterFail(b.ctx, taskFail(dead))
	require.NoError(t, err)

	got, err := b.d.Replay(b.ctx, dead.QueueID, contracts.RequeueRequest{Priority: contracts.PriorityNormal})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, contracts.PriorityNormal, got.Priority)
	require.Equal(t, 0, got.Attempts)
	b.requireGone(t, fu.TaskID)
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_tasks_replayed_total", "via", "api"))

	_, err = b.d.Replay(b.ctx, dead.QueueID, contracts.RequeueRequest{})
	requireCode(t, err, contracts.CodeConflict)
	_, err = b.d.Replay(b.ctx, "00000000-0000-4000-8000-000000000000", contracts.RequeueRequest{})
	requireCode(t, err, contracts.CodeNotFound)

	// A dead letter whose archived task was never made (crash before
	// AfterFail) replays all the same.
	other := b.deadLetter(t)
	_, err = b.d.Replay(b.ctx, other.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Equal(t, 2.0, metric(t, b.reg, "flowgate_tasks_replayed_total", "via", "api"))
}

// A replay from Asynqmon that the ledger refuses (another task of the
// encounter is open now) goes back to the archive with the reason as its
// error; the task stays a dead letter and keeps its record.
func TestRefusedReplayGoesBackToTheArchive(t *testing.T) {
	t.Parallel()
	b := setup(t, options{start: true})
	dead := b.deadLetter(t)
	fu, err := b.d.AfterFail(b.ctx, taskFail(dead))
	require.NoError(t, err)
	_, err = b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: dead.EncounterID, Payload: json.RawMessage(`{"visit":2}`)})
	require.NoError(t, err)

	require.NoError(t, b.rt.Inspector.RunTask(asynqrt.QueueLow, fu.TaskID))
	waitFor(t, asynqWait, "the refused replay to be archived again", func() bool {
		info, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueLow, fu.TaskID)
		return err == nil && info.State == asynq.TaskStateArchived && info.LastErr != ""
	})
	info := b.requireArchived(t, fu.TaskID)
	require.Contains(t, info.LastErr, "another task of the same encounter is open")
	require.True(t, b.get(t, dead.QueueID).InDLQ())
	has, err := b.rt.DLQ.Has(b.ctx, asynqrt.QueueLow, fu.TaskID)
	require.NoError(t, err)
	require.True(t, has)
}

// Crash window 3: the ledger made a dead letter but nobody archived it (a
// crash before AfterFail, or a move to the DLQ by hand). The DLQ-repair job
// archives dead letters of the last hour, once.
func TestDLQRepairArchivesWhatWasMissed(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	job := jobNamed(t, b, taskjobs.JobDLQRepair)
	old := b.deadLetter(t)
	b.clock.Advance(2 * time.Hour) // out of the window
	missed := b.deadLetter(t)
	byHand := b.create(t, 3, contracts.PriorityNormal)
	_, err := b.l.MoveToDLQ(b.ctx, byHand.QueueID, "")
	require.NoError(t, err)
	byHand = b.get(t, byHand.QueueID)
	half := b.deadLetter(t)
	// A crash between enqueue and archive leaves the replay task scheduled.
	_, err = b.rt.Client.Enqueue(asynq.NewTask(taskjobs.TypeReplay, []byte(`{"queue_id":"`+half.QueueID+`"}`)),
		asynq.TaskID(taskjobs.DeadLetterTaskID(half)), asynq.Queue(asynqrt.QueueLow), asynq.ProcessIn(time.Hour))
	require.NoError(t, err)

	require.NoError(t, job.Job.Run(b.ctx))
	archived, err := b.rt.Inspector.ListArchivedTasks(asynqrt.QueueLow)
	require.NoError(t, err)
	require.Empty(t, archived, "dead letters younger than the grace are left to AfterFail")

	b.clock.Advance(2 * time.Minute)
	for range 2 {
		require.NoError(t, job.Job.Run(b.ctx))
	}
	for _, d := range []contracts.Task{missed, byHand, half} {
		b.requireArchived(t, taskjobs.DeadLetterTaskID(d))
		has, err := b.rt.DLQ.Has(b.ctx, asynqrt.QueueLow, taskjobs.DeadLetterTaskID(d))
		require.NoError(t, err)
		require.True(t, has, "record of %s", d.QueueID)
	}
	require.Equal(t, taskjobs.DeadLetterTaskID(byHand), "dlq:"+byHand.QueueID+":0", "never claimed")
	_, err = b.rt.Inspector.GetTaskInfo(asynqrt.QueueLow, taskjobs.DeadLetterTaskID(old))
	require.ErrorIs(t, err, asynq.ErrTaskNotFound, "older than the window")
	archived, err = b.rt.Inspector.ListArchivedTasks(asynqrt.QueueLow)
	require.NoError(t, err)
	require.Len(t, archived, 3, "the second run adds nothing")
	require.Equal(t, 2.0, metric(t, b.reg, "flowgate_tasks_dead_lettered_total", "via", "repair"),
		"the half-archived one was created before the job")
}

// taskFail is the FailResult a FAIL that dead-lettered t returned.
func taskFail(t contracts.Task) tasks.FailResult {
	return tasks.FailResult{Task: t, DLQ: true}
}
