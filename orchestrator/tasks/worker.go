package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/timeutil"
)

// Claim atomically takes up to req.Limit (1..50, default 1) pending tasks
// for req.WorkerID — HIGH before NORMAL before LOW, FIFO within a priority —
// and returns them PROCESSING with worker_id, claimed_at and heartbeat_at
// set. With req.WaitMS > 0 (≤ 20000) it looks again every
// Config.ClaimPollInterval until a task appears, the wait ends or ctx is
// done. No pending task is not an error: the slice is empty.
func (l *Ledger) Claim(ctx context.Context, req contracts.ClaimRequest) ([]contracts.Task, error) {
	return l.ClaimPolling(ctx, ctx, req)
}

// ClaimPolling is Claim whose wait between tries ends early when poll is
// done (a shutdown, a client hanging up), while each try's script call runs
// under ctx alone: ending the wait never interrupts a claim under way, whose
// outcome would otherwise be unknown (an UncertainClaimError, answered 503).
// poll should be derived from ctx.
func (l *Ledger) ClaimPolling(ctx, poll context.Context, req contracts.ClaimRequest) ([]contracts.Task, error) {
	const op = "tasks.Claim"
	if err := label(op, "worker_id", req.WorkerID, true); err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit == 0 {
		limit = 1
	}
	if limit < 1 || limit > contracts.MaxClaimLimit {
		return nil, invalid(op, "limit", "limit must be 1..%d", contracts.MaxClaimLimit)
	}
	if req.WaitMS < 0 || req.WaitMS > contracts.MaxClaimWaitMS {
		return nil, invalid(op, "wait_ms", "wait_ms must be 0..%d", contracts.MaxClaimWaitMS)
	}
	deadline := time.Now().Add(time.Duration(req.WaitMS) * time.Millisecond)
	for {
		tasks, err := l.claimOnce(ctx, op, req.WorkerID, limit)
		if err != nil || len(tasks) > 0 {
			return tasks, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return tasks, nil
		}
		if timeutil.Sleep(poll, min(left, l.cfg.ClaimPollInterval)) != nil {
			return tasks, nil
		}
	}
}

func (l *Ledger) claimOnce(ctx context.Context, op, worker string, limit int) ([]contracts.Task, error) {
	return l.claimToken(ctx, op, worker, limit, uuid.NewString())
}

// claimToken is one claim with token: the claim script itself with one
// shard, claimSharded with several.
func (l *Ledger) claimToken(ctx context.Context, op, worker string, limit int, token string) ([]contracts.Task, error) {
	if l.set.N() == 1 {
		return l.claimWith(ctx, op, 0, worker, limit, token)
	}
	return l.claimSharded(ctx, op, worker, limit, token)
}

// claimWith runs the claim script in shard sh.
func (l *Ledger) claimWith(ctx context.Context, op string, sh int, worker string, limit int, token string) ([]contracts.Task, error) {
	now := l.cfg.Now().UnixMilli()
	argv := []any{l.ks[sh].base, now, l.cfg.HistoryLimit, worker, limit, token, ClaimTokenTTL.Milliseconds()}
	v, err := l.sc.run(ctx, lua.claim, l.ks[sh].scriptKeys(l.ks[sh].claim(token)), argv...).Result()
	if err != nil {
		serr := storeError(op, err)
		if uncertain(err) {
			var ce *contracts.Error
			if errors.As(serr, &ce) {
				ce.Err = &UncertainClaimError{Token: token, Err: ce.Err}
			}
		}
		return nil, serr
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, badReply(op, v)
	}
	out := make([]contracts.Task, 0, len(arr)-1)
	for _, raw := range arr[1:] {
		t, ok := claimedTask(raw, worker, now)
		if !ok {
			return nil, badReply(op, v)
		}
		out = append(out, t)
	}
	return out, nil
}

// ClaimTokenTTL is how long a claim's token and its ids are kept, and how
// long a cancelled token stays cancelled: longer than a claim script can sit
// unread in a hung Redis's socket plus the time CancelClaim is retried.
const ClaimTokenTTL = 15 * time.Minute

// UncertainClaimError is in the chain of Claim's error when the claim
// script was sent but its outcome is unknown (a timeout, a dropped
// connection): Redis may have run it — or may still run it — and the tasks
// it took would be held by a worker that was told the claim failed. Pass
// Token to CancelClaim (retry until it succeeds) to take them back.
type UncertainClaimError struct {
	Token string
	Err   error
}

func (e *UncertainClaimError) Error() string {
	return "claim outcome unknown (token " + e.Token + "): " + e.Err.Error()
}

func (e *UncertainClaimError) Unwrap() error { return e.Err }

// uncertain reports whether a failed call may still have been run by Redis:
// anything but an error reply (which Redis sends instead of running it, or
// after a script failed as a whole).
func uncertain(err error) bool {
	var rerr redis.Error
	return !errors.As(err, &rerr)
}

// ClaimCancel is the outcome of CancelClaim.
type ClaimCancel struct {
	Released int // tasks put back to PENDING
	Kept     int // tasks that had moved on (ACKed, recovered, claimed again) and were left alone
}

// CancelClaim takes back the claim with token (from an
// UncertainClaimError): its tasks still PROCESSING under it go back to
// PENDING in their old place, no attempt counted, and the token is
// cancelled for ClaimTokenTTL so that the claim, if Redis runs it only now,
// takes nothing. Safe to repeat. On a sharded ledger it visits every shard
// (a claim may have taken tasks in several, and its script may still run in
// any of them).
func (l *Ledger) CancelClaim(ctx context.Context, token string) (ClaimCancel, error) {
	const op = "tasks.CancelClaim"
	if err := uuid.Validate(token); err != nil {
		return ClaimCancel{}, invalid(op, "token", "a claim token is a UUID")
	}
	var out ClaimCancel
	for sh := range l.ks {
		v, err := l.run(ctx, op, lua.cancelClaim, sh, l.cfg.Now(), l.ks[sh].scriptKeys(l.ks[sh].claim(token)), token,
			ClaimTokenTTL.Milliseconds())
		if err != nil {
			return out, err
		}
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			return out, badReply(op, v)
		}
		released, _ := arr[0].(int64)
		kept, _ := arr[1].(int64)
		out.Released += int(released)
		out.Kept += int(kept)
	}
	return out, nil
}

// Unclaim gives back a claim that never reached its worker (the HTTP client
// of the claim hung up): the task goes back to PENDING in the place it had
// in its priority's queue, with worker_id, claimed_at and heartbeat_at
// cleared and no attempt counted. It acts only while the task is still
// PROCESSING under that very claim — workerID and claimedAt, as Claim
// returned them — so a task that a sweep recovered and another claim (even
// by the same worker) took meanwhile is left alone: Noop, with a Message
// saying so.
func (l *Ledger) Unclaim(ctx context.Context, id, workerID string, claimedAt time.Time) (Outcome, error) {
	const op = "tasks.Unclaim"
	id, err := queueID(op, id)
	if err != nil {
		return Outcome{}, err
	}
	if err := label(op, "worker_id", workerID, true); err != nil {
		return Outcome{}, err
	}
	r, err := l.single(ctx, op, lua.unclaim, id, "", workerID, claimedAt.UnixMilli())
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Task: taskFromFields(r.fields), Noop: r.code == codeNoop}
	if o.Noop {
		o.Message = fmt.Sprintf("task is no longer PROCESSING under the claim of worker %s at %s (it is %s, worker %q); unclaim changed nothing",
			workerID, claimedAt.UTC().Format(time.RFC3339Nano), o.Task.Status, o.Task.WorkerID)
	}
	return o, nil
}

// Heartbeat extends the claim of a PROCESSING task: heartbeat_at and
// updated_at = now, which keeps it out of RecoverStale and extends its
// visibility timeout (RecoverExpired), so a worker that keeps sending
// heartbeats holds its task however long it works. Only the worker holding
// it may: another worker, or a task that is not PROCESSING, is a conflict
// carrying the current status.
func (l *Ledger) Heartbeat(ctx context.Context, id string, req contracts.HeartbeatRequest) (contracts.Task, error) {
	const op = "tasks.Heartbeat"
	id, err := queueID(op, id)
	if err != nil {
		return contracts.Task{}, err
	}
	if err := label(op, "worker_id", req.WorkerID, true); err != nil {
		return contracts.Task{}, err
	}
	r, err := l.single(ctx, op, lua.heartbeat, id, "", req.WorkerID, l.cfg.Now().Add(-l.cfg.MaxProcessing).UnixMilli())
	if err != nil {
		return contracts.Task{}, err
	}
	return taskFromFields(r.fields), nil
}

// AckResult is the outcome of Ack.
type AckResult struct {
	Task      contracts.Task
	Duplicate bool // the task was already DONE with the same experityActions; nothing changed
}

// Ack marks a task DONE and stores the ACK's experityActions in
// parsed_payload.experityActions. Legal from PROCESSING (when req.WorkerID
// is given it must hold the task) and from PENDING: a late ACK of a task a
// sweep had recovered is accepted, since the work is done and doing it again
// would repeat its effects. A repeated ACK of a DONE task with the same
// experityActions (compared canonically) is a Duplicate, not an error; with
// different ones it is a conflict, as is an ACK of an ERROR task. A given
// encounter_id must match the task's (else CodeInvalid).
func (l *Ledger) Ack(ctx context.Context, req contracts.AckRequest) (AckResult, error) {
	return l.ack(ctx, req, false, nil)
}

// AckBrief is Ack answering only what the ACK webhook reports: the result's
// task carries its queue_id, encounter_id, status, priority, attempts and
// worker_id, not its payload, parsed_payload or times. Redis then reads
// and sends 9 fields instead of 23: the webhook's hot path.
func (l *Ledger) AckBrief(ctx context.Context, req contracts.AckRequest) (AckResult, error) {
	return l.ack(ctx, req, true, nil)
}

// AckBriefChecked is AckBrief making rc's replay check in the ACK's script
// (ReplayCheck): a replay fails with ErrReplayed and changes nothing. A
// nil rc checks nothing.
func (l *Ledger) AckBriefChecked(ctx context.Context, req contracts.AckRequest, rc *ReplayCheck) (AckResult, error) {
	return l.ack(ctx, req, true, rc)
}

func (l *Ledger) ack(ctx context.Context, req contracts.AckRequest, brief bool, rc *ReplayCheck) (AckResult, error) {
	const op = "tasks.Ack"
	id, err := queueID(op, req.QueueID)
	if err != nil {
		return AckResult{}, err
	}
	if err := l.checkWebhookIDs(op, req.EncounterID, req.WorkerID); err != nil {
		return AckResult{}, err
	}
	actions, fp, err := jsonValue(op, "experityActions", req.ExperityActions)
	if err != nil {
		return AckResult{}, err
	}
	if actions == "" {
		actions = "null"
	}
	r, err := l.singleChecked(ctx, op, lua.ack, id, req.EncounterID, rc, req.EncounterID, req.WorkerID, actions, fp, flag(brief))
	if err != nil {
		return AckResult{}, err
	}
	if brief && len(r.fields) > 0 {
		r.fields["queue_id"] = id
	}
	return AckResult{Task: taskFromFields(r.fields), Duplicate: r.code == codeNoop}, nil
}

// FailResult is the outcome of Fail.
type FailResult struct {
	Task contracts.Task
	// Retry: attempts < max_attempts; the task is ERROR and the caller
	// should schedule Requeue (with backoff). Exactly one of Retry and DLQ
	// is true.
	Retry bool
	// DLQ: the task ran out of attempts and is now a dead letter (ERROR,
	// parsed_payload.dlq = true, error_message = contracts.DLQErrorMessage;
	// the worker's message is in its history).
	DLQ bool
	// Duplicate: this FAIL was recorded already (a worker re-sent it after
	// a timeout); nothing changed, Retry/DLQ say what the first one did.
	Duplicate bool
}

// Fail records a failed attempt of a PROCESSING task: ERROR, attempts+1,
// error_message (truncated to MaxErrorMessageBytes). When attempts reaches
// max_attempts the task becomes a dead letter instead. Failing a task that
// is not PROCESSING (a PENDING one, a replayed FAIL of an ERROR one) is a
// conflict; a given worker_id must hold the task; a given encounter_id must
// match.
func (l *Ledger) Fail(ctx context.Context, req contracts.FailRequest) (FailResult, error) {
	return l.FailChecked(ctx, req, nil)
}

// FailChecked is Fail making rc's replay check in the FAIL's script
// (ReplayCheck): a replay fails with ErrReplayed and changes nothing. A
// nil rc checks nothing.
func (l *Ledger) FailChecked(ctx context.Context, req contracts.FailRequest, rc *ReplayCheck) (FailResult, error) {
	const op = "tasks.Fail"
	id, err := queueID(op, req.QueueID)
	if err != nil {
		return FailResult{}, err
	}
	if err := l.checkWebhookIDs(op, req.EncounterID, req.WorkerID); err != nil {
		return FailResult{}, err
	}
	msg := message(req.ErrorMessage)
	if msg == "" {
		msg = "worker reported a failure without an error_message"
	}
	r, err := l.singleChecked(ctx, op, lua.fail, id, req.EncounterID, rc, req.EncounterID, req.WorkerID, msg, contracts.DLQErrorMessage)
	if err != nil {
		return FailResult{}, err
	}
	if r.code == codeNoop { // the same FAIL again
		dlq := r.b == "dlq"
		return FailResult{Task: taskFromFields(r.fields), Retry: !dlq, DLQ: dlq, Duplicate: true}, nil
	}
	dlq := r.a == "dlq"
	return FailResult{Task: taskFromFields(r.fields), Retry: !dlq, DLQ: dlq}, nil
}

func (l *Ledger) checkWebhookIDs(op, encounter, worker string) error {
	if err := label(op, "encounter_id", encounter, false); err != nil {
		return err
	}
	return label(op, "worker_id", worker, false)
}
