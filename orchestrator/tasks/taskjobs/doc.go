// Package taskjobs is the Asynq and cron side of the VM task ledger
// (package tasks, docs/tasks.md): it turns the outcome of a worker's FAIL into a
// durable Asynq follow-up, replays dead letters from Asynqmon or the API,
// runs the seed's sweeps as scheduler jobs, and exports the seed's
// Monitoring Points.
//
// # After a FAIL
//
// The ledger transition comes first (tasks.Ledger.Fail), the Asynq enqueue
// second (Dispatcher.AfterFail):
//
//   - Retry: a "tasks:requeue" task is scheduled on Config.Queue (high) after
//     the backoff of the attempt — Config.Backoff at n = attempts−1, by
//     default 10 s·2^(attempts−1) capped at 5 min — and its handler calls
//     Ledger.Requeue with HIGH priority. Its Asynq id is RequeueTaskID: the
//     queue_id, attempts and the FAIL's updated_at, so calling AfterFail
//     again for the same FAIL finds the task already there (asynq's
//     ErrTaskIDConflict counts as success), and the FAIL after a replay,
//     whose attempts start again at 1, does not collide with a requeue kept
//     for Config.Retention. The handler requeues only a task still ERROR
//     with the attempts it was scheduled for (Ledger.RequeueAttempt: the
//     check and the move are one script), so a requeue delivered late —
//     after the retry sweep or a PATCH requeue did its work, even after the
//     task failed again and awaits that FAIL's own backoff — changes
//     nothing.
//   - Dead letter: a "tasks:replay" task is enqueued on Config.ReplayQueue
//     (low) far in the future and at once archived, so Asynqmon lists it
//     under the archive; "Run" there makes it pending and its handler calls
//     Ledger.Replay (PENDING, attempts and recoveries 0) and deletes the
//     durable dead-letter record. The same dead letter is also written to
//     that record (dlq.SourceTasks), which nothing trims. Its Asynq id is
//     DeadLetterTaskID: the queue_id and the claimed_at of the claim that
//     ran out (its FAIL's or recovery's) — stable while the task stays a
//     dead letter (an operator's amendment changes updated_at, not
//     claimed_at) and new for the next dead-letter episode after a replay,
//     since every FAIL or sweep needs a claim first.
//
// Dispatcher.Replay (POST /queue/{id}/replay) replays through the ledger and
// removes the archived task and the record.
//
// # Crash windows
//
// The process may die between the ledger transition and the enqueue:
//
//   - A lost requeue is caught by the retry-overdue job (Ledger.RetryOverdue,
//     every minute): an ERROR task awaiting a retry whose last update is
//     older than RetryOverdueAfter (default 10 min, more than the longest
//     backoff) goes back to PENDING HIGH.
//   - A dead letter without its archived task is caught by the DLQ-repair job:
//     dead letters updated between DLQRepairWindow (1 h) and DLQRepairGrace
//     (1 min) ago get their archived task and record, idempotently (the id
//     is deterministic). The window also covers dead letters made by hand
//     (PATCH status, MoveToDLQ). An operator who deletes an archived task in
//     Asynqmon within that hour sees it come back while the ledger still
//     holds the dead letter; after it, it stays gone.
//   - Once enqueued, the follow-up is Asynq's: a scheduled task waits in
//     Redis for any instance, and a task whose worker died mid-run is
//     recovered by asynq when its lease expires.
//
// # Sweeps
//
// Jobs returns the seed's cron jobs with their settings: heartbeat monitor
// (30 s: PROCESSING with no activity for 2 min → PENDING HIGH),
// visibility-timeout sweep (5 min: PROCESSING with no heartbeat — or claim,
// if it never had one — for 10 min: a heartbeat extends the timeout, as in
// SQS, so a healthy long task is never taken), SLA promotion (15 min:
// PENDING for 30 min → HIGH), the two safety nets above, and the retention job tasks_purge_done (PurgeSpec, hourly: DONE
// tasks whose last update is older than PurgeAfter, 7 days, are deleted by
// Ledger.PurgeDone; a negative PurgeAfter disables it). Dead letters are
// never purged: they are the manual-review queue, and their archived task
// and durable record would be left behind. A recovery is not an attempt:
// it counts in the task's recoveries, not its attempts, and the recovery
// that brings recoveries to MAX_RECOVERIES (tasks.Config.MaxRecoveries,
// default 5) makes a dead letter, which gets its archived task like one
// from a FAIL.
//
// # Metrics
//
// On Config.Registerer (counters count what this instance did; the gauges
// read the shared ledger at scrape, so every instance reports the same):
//
//	flowgate_tasks_recovered_total{sweep}      heartbeat | vt: PROCESSING → PENDING by a sweep (worker silent)
//	flowgate_tasks_promoted_total              SLA promotions to HIGH
//	flowgate_tasks_requeued_total{via}         asynq | retry_overdue: ERROR → PENDING for a retry
//	flowgate_tasks_dead_lettered_total{via}    fail | heartbeat | vt | repair: dead letters given their archived task
//	flowgate_tasks_replayed_total{via}         api | asynq: dead letters back to PENDING
//	flowgate_tasks_purged_total                DONE tasks deleted by the retention job
//	flowgate_tasks{status}                     tasks per status
//	flowgate_tasks_pending{priority}           PENDING tasks per priority
//	flowgate_tasks_dlq_size                    dead letters (also counted in status ERROR)
//	flowgate_tasks_retry_waiting               ERROR tasks awaiting their requeue
//	flowgate_tasks_processing_silent_seconds   since the longest-silent PROCESSING task's last activity; 0 if none
//
// ACK/FAIL rates are counted by package webhooks. The seed's "retry rate"
// (share of tasks that need a retry) is retries over attempt outcomes; a
// retry is a requeue after a FAIL or a recovery by a sweep, an outcome is a
// retry, a new dead letter or a task becoming DONE:
//
//	  (sum(increase(flowgate_tasks_requeued_total[1h])) + sum(increase(flowgate_tasks_recovered_total[1h])))
//	/ (sum(increase(flowgate_tasks_requeued_total[1h])) + sum(increase(flowgate_tasks_recovered_total[1h]))
//	   + sum(increase(flowgate_tasks_dead_lettered_total[1h]))
//	   + max(delta(flowgate_tasks{status="DONE"}[1h])) + sum(increase(flowgate_tasks_purged_total[1h])))
//
// (max, not sum, over the gauge: every instance reports the same ledger;
// the purged counter adds back the DONE tasks the retention job removed
// within the hour, which the gauge's delta lost.)
// Package webhooks' flowgate_webhook_requests_total{hook="fail",
// outcome="requeued"} counts the same FAIL-driven retries when the FAIL
// arrives rather than when the requeue runs.
package taskjobs
