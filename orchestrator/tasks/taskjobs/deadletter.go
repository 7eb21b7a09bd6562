package taskjobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/dlq"
)

// deadLetter gives dead letter t its archived replay task and durable
// record (archive), and counts and logs it when via (viaFail, a sweep,
// viaRepair) created the task.
func (d *Dispatcher) deadLetter(ctx context.Context, t contracts.Task, via string, overwrite bool) (string, bool, error) {
	id, created, err := d.archive(ctx, t, overwrite)
	if created {
		d.m.deadLettered.WithLabelValues(via).Inc()
		d.log.Warn("task is in the dead letter queue; replay it from Asynqmon or POST /queue/{id}/replay",
			"queue_id", t.QueueID, "encounter_id", t.EncounterID, "attempts", t.Attempts, "recoveries", t.Recoveries,
			"via", via, "asynq_task_id", id)
	}
	return id, created, err
}

// archive makes sure dead letter t has its archived replay task in
// Config.ReplayQueue and its durable record (overwrite: replace an existing
// record, which the reconciler may have written from the archive with less
// detail). It reports the Asynq id and whether it created the task. Every
// step is idempotent, so concurrent callers (AfterFail and the repair job)
// and a repeat after a crash between the steps end in the same state.
func (d *Dispatcher) archive(ctx context.Context, t contracts.Task, overwrite bool) (string, bool, error) {
	id, queue := DeadLetterTaskID(t), d.cfg.ReplayQueue
	payload, err := encode(replayPayload{QueueID: t.QueueID, EncounterID: t.EncounterID, Attempts: t.Attempts,
		MaxAttempts: t.MaxAttempts, Recoveries: t.Recoveries, ErrorMessage: t.ErrorMessage, DeadLetteredAt: t.UpdatedAt})
	if err != nil {
		return id, false, err
	}
	// Far in the future so that no server runs it before it is archived.
	_, err = d.cfg.Runtime.Client.EnqueueContext(ctx, asynq.NewTask(TypeReplay, payload), asynq.TaskID(id),
		asynq.Queue(queue), asynq.ProcessIn(farFuture), asynq.MaxRetry(replayMaxRetry), asynq.Timeout(handlerTimeout))
	created := err == nil
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return id, false, fmt.Errorf("enqueue replay task %s: %w", id, err)
	}
	if !created {
		info, err := d.cfg.Runtime.Inspector.GetTaskInfo(queue, id)
		if err != nil {
			return id, false, fmt.Errorf("replay task %s: %w", id, err)
		}
		switch info.State {
		case asynq.TaskStateArchived:
			return id, false, d.record(ctx, t, id, payload, overwrite)
		case asynq.TaskStateScheduled: // a crash between enqueue and archive
		default: // pending, active or retrying: being run (from Asynqmon), which replays this task
			return id, false, nil
		}
	}
	if err := d.cfg.Runtime.Inspector.ArchiveTask(queue, id); err != nil {
		// A concurrent caller may have archived it in between.
		info, ierr := d.cfg.Runtime.Inspector.GetTaskInfo(queue, id)
		if ierr != nil || info.State != asynq.TaskStateArchived {
			return id, created, fmt.Errorf("archive replay task %s: %w", id, err)
		}
	}
	return id, created, d.record(ctx, t, id, payload, overwrite)
}

// record writes the durable dead-letter record of t under the replay task's
// id and queue, so that the reconciler (which copies the archive) and a
// later replay find the same entry.
func (d *Dispatcher) record(ctx context.Context, t contracts.Task, id string, payload []byte, overwrite bool) error {
	queue := d.cfg.ReplayQueue
	added, err := d.cfg.Runtime.DLQ.Record(ctx, dlq.Record{
		TaskID: id, Queue: queue, Type: TypeReplay, Payload: payload, Error: t.ErrorMessage,
		Retried: t.Attempts, MaxRetry: t.MaxAttempts, FailedAt: t.UpdatedAt, Source: dlq.SourceTasks,
	}, overwrite)
	if err != nil {
		return err
	}
	if added {
		d.cfg.Runtime.DLQMetrics.Recorded(queue, dlq.SourceTasks)
	}
	return nil
}

// forget removes the archived replay task id and its durable record after
// a replay through the API. Both may be gone already; other failures leave
// a stale task, which replays nothing when run, and are logged.
func (d *Dispatcher) forget(ctx context.Context, id string) {
	queue := d.cfg.ReplayQueue
	err := d.cfg.Runtime.Inspector.DeleteTask(queue, id)
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		d.log.Warn("replayed, but the archived replay task was not deleted", "queue", queue, "asynq_task_id", id, "err", err)
	}
	if _, err := d.cfg.Runtime.DLQ.Delete(ctx, queue, id); err != nil {
		d.log.Warn("replayed, but the durable dead-letter record was not deleted", "queue", queue, "asynq_task_id", id, "err", err)
	}
}
