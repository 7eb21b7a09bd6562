// Package tasks is the ledger of the VM task queue that the n8n "Phase 2:
// Orchestration & Management" workflow managed (docs/tasks.md): tasks created by
// Phase 1, claimed and processed by VM workers (Phase 3), acknowledged or
// failed through webhooks, retried with HIGH priority, dead-lettered after
// max_attempts FAILs (or Config.MaxRecoveries sweep recoveries), and swept
// by cron jobs.
//
// The ledger knows nothing of HTTP or Asynq: handlers decode the wire shapes
// of package contracts and call it; the scheduler calls its sweeps; the FAIL
// handler schedules the retry (Requeue) through Asynq with backoff. Errors
// are *contracts.Error: CodeInvalid (bad input), CodeNotFound (unknown
// queue_id), CodeConflict (illegal transition; Details carry
// "current_status", "queue_id" and a machine-readable "reason"),
// CodeUnavailable (Redis unreachable, or refusing work for now: OOM, a
// read-only replica after a failover, loading, busy…; the cause is
// wrapped), CodeInternal (a script failed by itself: a bug).
//
// # States
//
//	PENDING → PROCESSING → DONE
//	              ↓   └─ silent worker (sweep) → PENDING (HIGH, recoveries+1)
//	            ERROR → (attempts < max) → PENDING (HIGH) → PROCESSING
//	              ↓
//	            ERROR + parsed_payload.dlq (dead letter) → Replay → PENDING
//
// Every transition is one Lua script (a file of lua/, listed in
// scripts.go), atomic across instances, and every illegal one is a conflict
// that changes nothing.
//
// # Decisions
//
//   - attempts counts failed attempts: FAILs (and PATCH status with
//     increment_attempts). After the nth, n < max_attempts means retry;
//     n = max_attempts means dead letter. So a task is FAILed at most
//     max_attempts times (default 3, MAX_RETRY_ATTEMPTS).
//   - A sweep recovery (the worker went silent: no heartbeat) is not an
//     attempt: it counts in recoveries, with its own limit
//     Config.MaxRecoveries (default 5, MAX_RECOVERIES) and the same rule —
//     the recovery that brings recoveries to it makes a dead letter
//     (error_message = contracts.DLQRecoveriesErrorMessage, the sweep's
//     reason in history). A recovered task goes back as HIGH, like a
//     requeued one: it has waited already.
//   - Visibility timeout as SQS has it: a heartbeat extends it. Both sweeps
//     go by the worker's last sign of life (heartbeat, or the claim), never
//     by how long the task has been PROCESSING, so a healthy long task is
//     never recovered, let alone dead-lettered, while its worker is alive.
//   - A dead letter stays status ERROR with parsed_payload.dlq = true and the
//     seed's error_message (contracts.DLQErrorMessage; after the last
//     recovery contracts.DLQRecoveriesErrorMessage); the worker's own
//     message, or the sweep's reason, is kept in history.
//   - Encounter idempotency: an encounter has at most one open task —
//     PENDING, PROCESSING, or ERROR awaiting a retry. DONE and dead letters
//     are closed, so a new create then makes a new task; a create while one
//     is open answers the open one (Duplicate). Replaying a dead letter
//     while another task of the encounter is open is a conflict.
//   - A dead letter leaves the DLQ only by Replay. PATCH status may amend it
//     (ERROR, dlq kept) but not move it out (conflict, reason
//     "dead_letter"): Replay's caller also removes the archived Asynq task
//     and the durable dead-letter record, which would be left behind.
//   - A late ACK of a task that a sweep had put back to PENDING is accepted
//     (the work is done; redoing it would repeat its effects). A late FAIL
//     is a conflict (the retry already happened). ACK/FAIL with a worker_id
//     must come from the worker holding the task.
//   - A repeated ACK with the same experityActions (compared canonically:
//     spacing and key order do not matter) is a Duplicate; different ones
//     are a conflict.
//   - A claim that never reached its worker (the HTTP client hung up) is
//     given back by Unclaim: PENDING in its old place, no attempt counted,
//     and only while that very claim (worker_id and claimed_at) still
//     holds the task.
//   - Requeue is idempotent: a task already PENDING or PROCESSING is left
//     alone and reported as a no-op, so a replayed Asynq requeue is harmless.
//   - payload and experityActions are stored as given (compacted), never
//     re-encoded by Lua, so empty arrays and big numbers survive.
//     parsed_payload is assembled from three stored parts: the base object
//     (set by PATCH status), experityActions (ACK) and the dlq flag.
//   - History is a capped list (Config.HistoryLimit, default 50; oldest
//     dropped) of transitions and in-state changes (SLA promotion, a move to
//     the DLQ). Heartbeats are not recorded. Get returns it; List only with
//     History; transitions return tasks without it.
//   - Claim order: HIGH, NORMAL, LOW; FIFO within a priority by the sequence
//     number taken when the task last became PENDING (a requeue queues it
//     last; an SLA promotion keeps it, so the promoted task is served ahead
//     of HIGH tasks queued after it).
//   - Timestamps are Unix milliseconds in Redis and RFC 3339 UTC on the
//     wire. Transitions use Config.Now; sweeps take now from the caller;
//     scripts never call TIME.
//
// # Sweeps
//
// Each reads only the affected part of one sorted set, Config.SweepBatch
// tasks per script call: RecoverStale (heartbeat monitor: by last activity),
// RecoverExpired (visibility timeout: by the last heartbeat or claim; the
// heartbeat script moves the task's entry forward), PromoteOverdue (SLA:
// by created_at, NORMAL/LOW only) and RetryOverdue (ERROR tasks whose
// scheduled requeue never came). Keys are listed in keys.go.
//
// # Retention
//
// DONE tasks are kept in a retention index by updated_at (maintained by the
// transition scripts, like every other index). PurgeDone deletes those
// older than a threshold — hash, history and every index entry (all,
// status:DONE, the encounter's set) — in batches, O(affected); afterwards
// Get answers not found and List and Stats do not count them, and a create
// with a purged queue_id makes a new task. Dead letters are never purged:
// they are the manual-review queue. The package taskjobs runs it hourly
// with a 7-day threshold.
//
// Give the Ledger a client with automatic retries off (MaxRetries: -1, as
// the sidecar's): go-redis re-sends a command whose reply timed out after
// it was written, which would run a transition script twice.
package tasks
