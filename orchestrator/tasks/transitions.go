package tasks

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowgate/flowgate/contracts"
)

// Outcome is the result of a transition that may change nothing.
type Outcome struct {
	Task contracts.Task
	// Noop: the task was already where the call would take it (a replayed
	// requeue of a PENDING or PROCESSING task, a move to the DLQ of a dead
	// letter), or RequeueAttempt's FAIL is not the task's latest; Message
	// says so.
	Noop    bool
	Message string
}

// UpdateStatus is the generic, n8n-compatible transition of PATCH
// /queue/{id}/status. Only the edges of the seed's diagram are legal —
//
//	PENDING → PROCESSING   (req.WorkerID becomes worker_id; claimed_at = heartbeat_at = now)
//	PROCESSING → DONE | ERROR | PENDING
//	ERROR → PENDING | ERROR   (ERROR → ERROR amends, e.g. moves to the DLQ)
//
// — everything else (anything from DONE, PENDING → DONE/ERROR/PENDING,
// PROCESSING → PROCESSING) is a conflict with the current status. Going to
// PENDING keeps the priority, queues the task last within it and clears
// worker_id, claimed_at and heartbeat_at.
//
// req.ErrorMessage sets error_message ("" clears it); req.IncrementAttempts
// adds one attempt (this call never moves to the DLQ on its own: the caller
// decides, as the workflow did); req.ParsedPayload replaces parsed_payload
// (an object or null) — its "experityActions" count for a later duplicate
// ACK, and "dlq": true with status ERROR makes the task a dead letter.
//
// A dead letter stays one here: it may be amended with status ERROR (and,
// when parsed_payload is replaced, "dlq": true), but any other change — a
// new status, or a parsed_payload without "dlq": true — is a conflict with
// reason "dead_letter". It leaves the DLQ only through Replay (POST
// /queue/{id}/replay, whose Dispatcher also removes the archived Asynq task
// and the durable dead-letter record that would otherwise be left behind).
func (l *Ledger) UpdateStatus(ctx context.Context, id string, req contracts.StatusUpdateRequest) (contracts.Task, error) {
	const op = "tasks.UpdateStatus"
	id, err := queueID(op, id)
	if err != nil {
		return contracts.Task{}, err
	}
	to, err := contracts.ParseStatus(string(req.Status))
	if err != nil {
		return contracts.Task{}, err
	}
	if err := label(op, "worker_id", req.WorkerID, false); err != nil {
		return contracts.Task{}, err
	}
	setMsg, msg := "0", ""
	if req.ErrorMessage != nil {
		setMsg, msg = "1", message(*req.ErrorMessage)
	}
	setPP := req.ParsedPayload != nil
	var pp ppParts
	if setPP {
		if pp, err = splitParsedPayload(op, req.ParsedPayload); err != nil {
			return contracts.Task{}, err
		}
		if pp.dlq && to != contracts.StatusError {
			return contracts.Task{}, invalid(op, "parsed_payload.dlq", "parsed_payload.dlq may be true only with status ERROR")
		}
	}
	r, err := l.single(ctx, op, lua.status, id, "", string(to), setMsg, msg, flag(req.IncrementAttempts),
		flag(setPP), pp.base, flag(pp.hasActions), pp.actions, pp.actionsFP, flag(pp.dlq), req.WorkerID)
	if err != nil {
		return contracts.Task{}, err
	}
	return taskFromFields(r.fields), nil
}

// Requeue brings an ERROR task awaiting a retry back to PENDING with
// req.Priority (default HIGH), last in that priority's queue; worker_id,
// claimed_at and heartbeat_at are cleared, attempts and error_message kept.
// It is idempotent for replays: a task already PENDING or PROCESSING is
// left alone (Noop). A DONE task or a dead letter is a conflict (use Replay
// for dead letters).
func (l *Ledger) Requeue(ctx context.Context, id string, req contracts.RequeueRequest) (Outcome, error) {
	return l.requeue(ctx, "tasks.Requeue", id, req, "")
}

// RequeueAttempt is Requeue for the scheduled retry of one FAIL: it acts
// only while the task is ERROR with exactly attempts failed attempts, i.e.
// still awaiting the retry of that FAIL. Otherwise — it was requeued,
// claimed and failed again meanwhile, so a later FAIL awaits its own
// requeue and backoff — it changes nothing (Noop, with a Message saying
// so). The check and the move are one script, so nothing can happen in
// between. Every other outcome is Requeue's.
func (l *Ledger) RequeueAttempt(ctx context.Context, id string, attempts int, req contracts.RequeueRequest) (Outcome, error) {
	const op = "tasks.RequeueAttempt"
	if attempts < 0 {
		return Outcome{}, invalid(op, "attempts", "attempts must not be negative")
	}
	return l.requeue(ctx, op, id, req, strconv.Itoa(attempts))
}

func (l *Ledger) requeue(ctx context.Context, op, id string, req contracts.RequeueRequest, attempts string) (Outcome, error) {
	id, err := queueID(op, id)
	if err != nil {
		return Outcome{}, err
	}
	prio, err := contracts.ParsePriority(string(req.Priority), contracts.PriorityHigh)
	if err != nil {
		return Outcome{}, err
	}
	r, err := l.single(ctx, op, lua.requeue, id, "", string(prio), attempts)
	if err != nil {
		return Outcome{}, err
	}
	o := outcome(r, "requeue")
	if r.a == "attempts_changed" {
		o.Message = fmt.Sprintf("task has %s failed attempts, not the %s this requeue was scheduled for; requeue changed nothing",
			r.b, attempts)
	}
	return o, nil
}

// Replay brings a dead letter back to PENDING with req.Priority (default
// HIGH), attempts and recoveries reset to 0 and the dlq flag cleared
// (error_message and history are kept). A task that is not a dead letter
// is a conflict, and so is a dead letter whose encounter has another open
// task meanwhile.
func (l *Ledger) Replay(ctx context.Context, id string, req contracts.RequeueRequest) (contracts.Task, error) {
	const op = "tasks.Replay"
	id, err := queueID(op, id)
	if err != nil {
		return contracts.Task{}, err
	}
	prio, err := contracts.ParsePriority(string(req.Priority), contracts.PriorityHigh)
	if err != nil {
		return contracts.Task{}, err
	}
	r, err := l.single(ctx, op, lua.replay, id, "", string(prio))
	if err != nil {
		return contracts.Task{}, err
	}
	return taskFromFields(r.fields), nil
}

// MoveToDLQ makes a PENDING, PROCESSING or ERROR task a dead letter by hand
// (manual review): status ERROR, parsed_payload.dlq = true, error_message =
// errorMessage (default contracts.DLQErrorMessage). Attempts are not
// changed. A dead letter is left alone (Noop); a DONE task is a conflict.
func (l *Ledger) MoveToDLQ(ctx context.Context, id, errorMessage string) (Outcome, error) {
	const op = "tasks.MoveToDLQ"
	id, err := queueID(op, id)
	if err != nil {
		return Outcome{}, err
	}
	msg := message(errorMessage)
	if msg == "" {
		msg = contracts.DLQErrorMessage
	}
	r, err := l.single(ctx, op, lua.dlq, id, "", msg, "moved to the dead letter queue: "+msg)
	if err != nil {
		return Outcome{}, err
	}
	return outcome(r, "move to the DLQ"), nil
}

func outcome(r reply, what string) Outcome {
	o := Outcome{Task: taskFromFields(r.fields), Noop: r.code == codeNoop}
	if o.Noop {
		state := strings.TrimPrefix(r.a, "already_")
		if state == "dlq" {
			state = "in the dead letter queue"
		} else {
			state = strings.ToUpper(state)
		}
		o.Message = "task is already " + state + "; " + what + " changed nothing"
	}
	return o
}
