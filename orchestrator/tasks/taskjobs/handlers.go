package taskjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
)

// requeuePayload is the payload of TypeRequeue: the task and the attempt
// whose failure scheduled it.
type requeuePayload struct {
	QueueID  string `json:"queue_id"`
	Attempts int    `json:"attempts"`
}

// replayPayload is the payload of TypeReplay. Only queue_id is used; the
// rest is for the operator looking at the archived task in Asynqmon.
type replayPayload struct {
	QueueID        string    `json:"queue_id"`
	EncounterID    string    `json:"encounter_id,omitempty"`
	Attempts       int       `json:"attempts"`
	MaxAttempts    int       `json:"max_attempts"`
	Recoveries     int       `json:"recoveries,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty"`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
}

func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil { // plain structs always marshal; keep the error path honest
		return nil, &contracts.Error{Code: contracts.CodeInternal, Op: "taskjobs.encode", Message: "payload", Err: err}
	}
	return b, nil
}

// RequeueTaskID is the Asynq id of the requeue scheduled after the FAIL that
// left t in ERROR: the same for the same FAIL, new for every FAIL (the
// attempts are reset by a replay, the FAIL's updated_at is not repeated).
func RequeueTaskID(t contracts.Task) string {
	return "requeue:" + t.QueueID + ":" + strconv.Itoa(t.Attempts) + ":" + strconv.FormatInt(t.UpdatedAt.UnixMilli(), 10)
}

// DeadLetterTaskID is the Asynq id of the archived replay task of dead
// letter t: the queue_id and the claimed_at of its last attempt (0 if it
// was never claimed since it last became PENDING). It stays the same while t
// is a dead letter and differs for its next dead-letter episode, which needs
// a new claim.
func DeadLetterTaskID(t contracts.Task) string {
	var claimed int64
	if t.ClaimedAt != nil {
		claimed = t.ClaimedAt.UnixMilli()
	}
	return "dlq:" + t.QueueID + ":" + strconv.FormatInt(claimed, 10)
}

// handleRequeue runs TypeRequeue: Ledger.RequeueAttempt with HIGH
// priority, so the task goes back to PENDING only if it is still ERROR with
// the attempts the requeue was scheduled for — checked and done in one
// script. Anything else means the retry already happened (the
// retry-overdue job, a PATCH requeue, an earlier run of this task; or it
// was requeued, claimed and failed again, and that later FAIL awaits its
// own requeue and backoff) or is not wanted (the task became a dead letter
// or DONE), and succeeds without a change.
func (d *Dispatcher) handleRequeue(ctx context.Context, at *asynq.Task) error {
	var p requeuePayload
	if err := json.Unmarshal(at.Payload(), &p); err != nil || p.QueueID == "" || p.Attempts < 0 {
		return badPayload(TypeRequeue, at.Payload(), err)
	}
	out, err := d.cfg.Ledger.RequeueAttempt(ctx, p.QueueID, p.Attempts, contracts.RequeueRequest{Priority: contracts.PriorityHigh})
	if contracts.ErrorCode(err) == contracts.CodeConflict { // DONE or a dead letter
		d.log.Debug("requeue not needed any more", "queue_id", p.QueueID, "scheduled_for_attempts", p.Attempts, "err", err)
		return nil
	}
	if err != nil {
		return permanent(err)
	}
	if out.Noop {
		d.log.Debug("requeue not needed any more", "queue_id", p.QueueID, "scheduled_for_attempts", p.Attempts,
			"status", out.Task.Status, "attempts", out.Task.Attempts, "why", out.Message)
		return nil
	}
	d.m.requeued.WithLabelValues(viaAsynq).Inc()
	d.log.Info("task requeued after its backoff", "queue_id", p.QueueID, "attempts", out.Task.Attempts,
		"priority", out.Task.Priority)
	return nil
}

// handleReplay runs TypeReplay, i.e. an archived dead letter an operator ran
// from Asynqmon: Ledger.Replay with HIGH priority, then the durable record
// of this task is deleted (asynq deletes the task itself on success). A task
// that is no longer a dead letter was replayed some other way: nothing to
// do. A replay refused because another task of the encounter is open goes
// back to the archive with that reason as its error.
func (d *Dispatcher) handleReplay(ctx context.Context, at *asynq.Task) error {
	var p replayPayload
	if err := json.Unmarshal(at.Payload(), &p); err != nil || p.QueueID == "" {
		return badPayload(TypeReplay, at.Payload(), err)
	}
	id, _ := asynq.GetTaskID(ctx)
	queue, _ := asynq.GetQueueName(ctx)
	t, err := d.cfg.Ledger.Replay(ctx, p.QueueID, contracts.RequeueRequest{Priority: contracts.PriorityHigh})
	switch {
	case err == nil:
		d.m.replayed.WithLabelValues(viaAsynq).Inc()
		d.log.Info("dead letter replayed", "queue_id", t.QueueID, "priority", t.Priority, "asynq_task_id", id, "via", viaAsynq)
	case conflictReason(err) == "not_dlq":
		d.log.Info("replay of a task that is no longer a dead letter: nothing to do", "queue_id", p.QueueID, "asynq_task_id", id)
	default:
		return permanent(err)
	}
	if _, err := d.cfg.Runtime.DLQ.Delete(ctx, queue, id); err != nil {
		d.log.Warn("replayed, but the durable dead-letter record was not deleted", "queue", queue, "asynq_task_id", id, "err", err)
	}
	return nil
}

// badPayload is the error of a task of type typ whose payload cannot be run:
// it wraps asynq.SkipRetry and, when the payload did not decode, the
// decoding error.
func badPayload(typ string, payload []byte, decodeErr error) error {
	if decodeErr != nil {
		return fmt.Errorf("taskjobs: bad %s payload %q: %w: %w", typ, payload, decodeErr, asynq.SkipRetry)
	}
	return fmt.Errorf("taskjobs: bad %s payload %q: %w", typ, payload, asynq.SkipRetry)
}

// permanent marks ledger errors that a retry cannot fix (all but
// unavailable and internal) so that asynq archives the task at once with
// the reason.
func permanent(err error) error {
	switch contracts.ErrorCode(err) {
	case contracts.CodeUnavailable, contracts.CodeInternal:
		return err
	}
	return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
}

// conflictReason is the ledger's machine-readable reason of a conflict, or "".
func conflictReason(err error) string {
	var e *contracts.Error
	if !errors.As(err, &e) || e.Code != contracts.CodeConflict {
		return ""
	}
	r, _ := e.Details["reason"].(string)
	return r
}
