package taskjobs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
)

// A FAIL with attempts left schedules one requeue task on the high queue,
// due after 10 s·2^(attempts−1); a second AfterFail for the same FAIL adds
// nothing.
func TestAfterFailSchedulesRequeueWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	task := b.create(t, 3, contracts.PriorityNormal)

	for _, tc := range []struct {
		attempts int
		delay    time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}} {
		res := b.failOnce(t, task.QueueID)
		require.True(t, res.Retry)
		require.Equal(t, tc.attempts, res.Task.Attempts)

		before := time.Now()
		fu, err := b.d.AfterFail(b.ctx, res)
		after := time.Now()
		require.NoError(t, err)
		require.Equal(t, taskjobs.FollowUp{Requeued: true, RetryAt: b.clock.Now().Add(tc.delay),
			TaskID: taskjobs.RequeueTaskID(res.Task)}, fu)

		info, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueHigh, fu.TaskID)
		require.NoError(t, err)
		require.Equal(t, asynq.TaskStateScheduled, info.State)
		require.Equal(t, taskjobs.TypeRequeue, info.Type)
		require.JSONEq(t, `{"queue_id":"`+task.QueueID+`","attempts":`+itoa(tc.attempts)+`}`, string(info.Payload))
		require.Equal(t, 24*time.Hour, info.Retention, "kept for Asynqmon once done")
		require.GreaterOrEqual(t, info.MaxRetry, 10)
		// asynq keeps the due time in whole seconds.
		require.WithinRange(t, info.NextProcessAt, before.Add(tc.delay).Add(-time.Second), after.Add(tc.delay).Add(time.Second))

		again, err := b.d.AfterFail(b.ctx, res)
		require.NoError(t, err, "a second call for the same FAIL is not an error")
		require.Equal(t, fu.TaskID, again.TaskID)
		require.True(t, again.Requeued)
		scheduled, err := b.rt.Inspector.ListScheduledTasks(asynqrt.QueueHigh)
		require.NoError(t, err)
		require.Len(t, scheduled, tc.attempts, "one requeue task per FAIL")

		// What the requeue task will do, done by hand so the next attempt can fail.
		_, err = b.l.Requeue(b.ctx, task.QueueID, contracts.RequeueRequest{})
		require.NoError(t, err)
	}
}

// After a replay the attempts start again at 1; the requeue of that FAIL
// is a new Asynq task, not a conflict with the requeue of the first
// episode's attempt 1 (which asynq keeps for Retention once done).
func TestRequeueAfterReplayIsANewTask(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	task := b.create(t, 2, contracts.PriorityNormal)
	first, err := b.d.AfterFail(b.ctx, b.failOnce(t, task.QueueID))
	require.NoError(t, err)
	_, err = b.l.Requeue(b.ctx, task.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.True(t, b.failOnce(t, task.QueueID).DLQ)
	_, err = b.d.Replay(b.ctx, task.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)

	res := b.failOnce(t, task.QueueID)
	require.Equal(t, 1, res.Task.Attempts)
	second, err := b.d.AfterFail(b.ctx, res)
	require.NoError(t, err)
	require.NotEqual(t, first.TaskID, second.TaskID)
	scheduled, err := b.rt.Inspector.ListScheduledTasks(asynqrt.QueueHigh)
	require.NoError(t, err)
	require.Len(t, scheduled, 2, "one requeue per FAIL")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// With a running runtime the requeue task brings the task back to PENDING
// with HIGH priority after its backoff.
func TestRequeueRunsThroughAsynq(t *testing.T) {
	t.Parallel()
	b := setup(t, options{backoff: asynqrt.Exponential{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}, start: true})
	task := b.create(t, 3, contracts.PriorityLow)
	res := b.failOnce(t, task.QueueID)
	fu, err := b.d.AfterFail(b.ctx, res)
	require.NoError(t, err)

	waitFor(t, asynqWait, "the requeue", func() bool { return b.get(t, task.QueueID).Status == contracts.StatusPending })
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.Equal(t, 1, got.Attempts, "the FAIL's attempt stays counted")
	require.Equal(t, "requeue", got.History[len(got.History)-1].By)
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_tasks_requeued_total", "via", "asynq"))

	waitFor(t, 5*time.Second, "the requeue task to complete", func() bool {
		info, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueHigh, fu.TaskID)
		return err == nil && info.State == asynq.TaskStateCompleted
	})
}

// A requeue that arrives after the retry happened another way changes
// nothing: the task was requeued by hand and claimed again, or failed again
// (its attempts moved on).
func TestStaleRequeueChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, options{backoff: asynqrt.Exponential{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	task := b.create(t, 5, contracts.PriorityNormal)
	first := b.failOnce(t, task.QueueID)
	_, err := b.l.Requeue(b.ctx, task.QueueID, contracts.RequeueRequest{}) // PATCH /queue/{id}/requeue
	require.NoError(t, err)
	b.claim(t, task.QueueID)
	fu, err := b.d.AfterFail(b.ctx, first) // late: the task is PROCESSING again
	require.NoError(t, err)

	// A requeue scheduled for attempt 1 while the task failed its attempt 2
	// and awaits that attempt's own requeue.
	b.clock.Advance(time.Second)
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: task.QueueID, ErrorMessage: "again"})
	require.NoError(t, err)
	stale, err := b.rt.Client.Enqueue(asynq.NewTask(taskjobs.TypeRequeue,
		[]byte(`{"queue_id":"`+task.QueueID+`","attempts":1}`)), asynq.Queue(asynqrt.QueueHigh), asynq.Retention(time.Hour))
	require.NoError(t, err)

	require.NoError(t, b.rt.Start())
	for _, id := range []string{fu.TaskID, stale.ID} {
		waitFor(t, asynqWait, "requeue task "+id+" to complete", func() bool {
			info, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueHigh, id)
			return err == nil && info.State == asynq.TaskStateCompleted
		})
	}
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusError, got.Status)
	require.Equal(t, 2, got.Attempts)
	require.Equal(t, 0.0, metric(t, b.reg, "flowgate_tasks_requeued_total", "via", "asynq"))
}

// The race the handler once had between reading the task and requeueing
// it: right after the handler's first ledger call, the task is requeued by
// hand, claimed and failed again. The requeue of attempt 1 must not
// requeue the ERROR task of attempt 2, whose own backoff is pending (it
// did when the check was a Get before the Requeue). A hook on the
// handler's Redis client makes the interleaving exact.
func TestRequeueRaceWithALaterFail(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	task := b.create(t, 5, contracts.PriorityNormal)
	first := b.failOnce(t, task.QueueID)
	require.Equal(t, 1, first.Task.Attempts)

	interfere := func() { // on the test's own client, not the hooked one
		_, err := b.l.Requeue(b.ctx, task.QueueID, contracts.RequeueRequest{})
		require.NoError(t, err)
		b.failOnce(t, task.QueueID)
	}
	opt, err := redis.ParseURL(b.db.URL())
	require.NoError(t, err)
	opt.MaxRetries = -1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	hook := &afterFirstCall{then: interfere}
	rdb.AddHook(hook)
	l, err := tasks.New(rdb, tasks.Config{KeyPrefix: "test", Now: b.clock.Now})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	d, err := taskjobs.New(taskjobs.Config{Ledger: l, Runtime: b.rt, Logger: discard(), Registerer: reg, Now: b.clock.Now})
	require.NoError(t, err)

	requeue := func(attempts string) {
		t.Helper()
		require.NoError(t, d.HandleRequeue(b.ctx, asynq.NewTask(taskjobs.TypeRequeue,
			[]byte(`{"queue_id":"`+task.QueueID+`","attempts":`+attempts+`}`))))
	}
	requeue("1")
	require.True(t, hook.done, "the interleaving happened")
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusError, got.Status, "attempt 2 still awaits its own requeue")
	require.Equal(t, 2, got.Attempts)
	// Its one ledger call requeued attempt 1 before the interference (whose
	// own requeue was then a no-op); it cannot act on attempt 2.
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_requeued_total", "via", "asynq"))

	requeue("1") // delivered again, late
	got = b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusError, got.Status)
	require.Equal(t, 2, got.Attempts)
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_requeued_total", "via", "asynq"))

	requeue("2") // the requeue of attempt 2 does its work
	got = b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.Equal(t, 2.0, metric(t, reg, "flowgate_tasks_requeued_total", "via", "asynq"))
}

// afterFirstCall runs then once, right after the first ledger call (a
// script, or a read of a task) of its client returns; the connection's
// handshake (HELLO, SELECT, CLIENT) and an EVALSHA refused with NOSCRIPT
// (the script not yet in this Redis's cache) do not count.
type afterFirstCall struct {
	then func()
	done bool
}

func (h *afterFirstCall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterFirstCall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return err // not run: go-redis sends the script itself next
		}
		h.fire(cmd)
		return err
	}
}

func (h *afterFirstCall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 {
			h.fire(cmds[0])
		}
		return err
	}
}

func (h *afterFirstCall) fire(cmd redis.Cmder) {
	switch cmd.Name() {
	case "evalsha", "eval", "fcall", "hgetall":
		if !h.done {
			h.done = true
			h.then()
		}
	}
}

// Crash window 1: the ledger recorded the FAIL but the process died before
// AfterFail. The retry-overdue job requeues the task once it is overdue.
func TestLostRequeueIsCaughtByRetryOverdue(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	task := b.create(t, 3, contracts.PriorityNormal)
	res := b.failOnce(t, task.QueueID)
	require.True(t, res.Retry)
	job := jobNamed(t, b, taskjobs.JobRetryOverdue)

	b.clock.Advance(9 * time.Minute) // the requeue could still come (backoff ≤ 5 min, plus slack)
	require.NoError(t, job.Job.Run(b.ctx))
	require.Equal(t, contracts.StatusError, b.get(t, task.QueueID).Status)

	b.clock.Advance(time.Minute + time.Millisecond)
	require.NoError(t, job.Job.Run(b.ctx))
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_tasks_requeued_total", "via", "retry_overdue"))
}

// Crash window 2: the requeue is enqueued, then the process stops before it
// runs. Another process on the same Redis (or this one restarted) runs it:
// the task is not lost.
func TestRequeueSurvivesProcessStop(t *testing.T) {
	t.Parallel()
	b := setup(t, options{backoff: asynqrt.Exponential{Base: 2 * time.Second, Max: 2 * time.Second}, start: true})
	task := b.create(t, 3, contracts.PriorityNormal)
	res := b.failOnce(t, task.QueueID)
	fu, err := b.d.AfterFail(b.ctx, res)
	require.NoError(t, err)
	b.rt.Shutdown() // the process goes away before the backoff ends

	info, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueHigh, fu.TaskID)
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStateScheduled, info.State, "still waiting in Redis")
	require.Equal(t, contracts.StatusError, b.get(t, task.QueueID).Status)

	_, _, reg2 := newRuntime(t, b.db, b.l, b.clock, options{start: true})
	waitFor(t, asynqWait, "the new process to run the requeue", func() bool {
		return b.get(t, task.QueueID).Status == contracts.StatusPending
	})
	require.Equal(t, contracts.PriorityHigh, b.get(t, task.QueueID).Priority)
	require.Equal(t, 1.0, metric(t, reg2, "flowgate_tasks_requeued_total", "via", "asynq"))
}

func TestAfterFailRejectsAnEmptyResult(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	_, err := b.d.AfterFail(b.ctx, tasks.FailResult{})
	requireCode(t, err, contracts.CodeInvalid)
	_, err = b.d.AfterFail(b.ctx, tasks.FailResult{Task: contracts.Task{QueueID: "x"}})
	requireCode(t, err, contracts.CodeInvalid)
}

func jobNamed(t *testing.T, b *bundle, name string) taskjobs.NamedJob {
	t.Helper()
	jobs, err := b.d.Jobs(taskjobs.SweepSettings{})
	require.NoError(t, err)
	for _, j := range jobs {
		if j.Name == name {
			return j
		}
	}
	t.Fatalf("no job %s", name)
	return taskjobs.NamedJob{}
}
