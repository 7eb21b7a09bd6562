// Package webhooks serves the ACK and FAIL webhooks of docs/tasks.md (the n8n
// "Phase 2: Orchestration & Management" workflow): VM workers report a
// finished task to POST /ack and a failed one to POST /fail; both are also
// served under /webhook/… (the URLs n8n gives production webhooks, so
// workers pointed at n8n keep working unchanged).
//
// # Paths
//
// Config.AckPath and Config.FailPath (defaults "/ack" and "/fail") are the
// primary paths; each is also served under Config.AliasPrefix (default
// "/webhook"), as n8n serves a webhook node of path p at /webhook/p. The
// paths are checked by New: absolute, no trailing slash, no spaces or
// ? # : * characters, no empty or dot segments, and the four routes
// distinct.
//
// # ACK
//
// Body contracts.AckRequest. tasks.Ledger.Ack marks the task DONE and
// stores experityActions; the answer is 200 contracts.WebhookResponse with
// status DONE, attempts and duplicate (a repeated ACK with the same
// experityActions changes nothing and says duplicate: true). A body that
// carries error_message (any value, null too) is a FAIL, not an ACK: it is
// refused with 400 before the ledger sees it, so a FAIL sent to /ack —
// misrouted, or captured and replayed there — never marks a task DONE.
//
// # FAIL
//
// Body contracts.FailRequest. tasks.Ledger.Fail records the attempt (ERROR,
// attempts+1, or a dead letter at max_attempts); then the FailFollower (the
// Asynq dispatcher) schedules the HIGH-priority requeue with backoff, or
// records the dead letter on its side. The answer is 200 WebhookResponse
// with requeued (a retry is scheduled), dlq (the task is a dead letter, with
// the seed's message "Max retry attempts exceeded. Moved to Dead Letter
// Queue.") and a message.
//
// When the follower fails after the ledger has recorded the FAIL, the
// answer is still 200, with requeued false and a message saying the retry
// will be scheduled by the recovery sweep (tasks.Ledger.RetryOverdue
// requeues ERROR tasks whose requeue never came); the failure is logged at
// error and counted with outcome "error". Answering 5xx would make the
// worker resend a FAIL that the ledger, having recorded it, would refuse
// with 409.
//
// # Errors
//
// Errors are the ledger's (or the decoder's) *contracts.Error, rendered by
// the app's ErrorHandler:
//
//   - 400 invalid: malformed JSON, a field of the wrong type (queue_id: 5),
//     queue_id missing or not a UUID, identifiers too long, a
//     Content-Encoding other than identity (bodies are read as sent), an
//     ACK carrying error_message (Details field "error_message"), and an
//     encounter_id that is not the task's. The last is a 400, not a 409,
//     as in the ledger: the request names one task and claims another's
//     encounter, a client bug that no state change will cure, while 409
//     means "the task is not in a state that allows this" and carries
//     current_status.
//   - 404 not_found: no task with that queue_id.
//   - 409 conflict, Details current_status and reason: an ACK of a DONE task
//     with other experityActions or of an ERROR task; a FAIL of a task that
//     is not PROCESSING (a PENDING one, a repeated FAIL); a worker_id that
//     does not hold the task.
//   - 401 unauthorized (from Config.Auth), 413 too_large (the app's body
//     limit), 503 unavailable (Redis).
//
// # Metrics
//
// On Config.Registerer:
//
//	flowgate_webhook_requests_total{hook="ack"|"fail", outcome}
//	flowgate_webhook_duration_seconds{hook}
//
// outcome is one of done, duplicate, requeued, dlq (the request succeeded),
// conflict, invalid, unauthorized, not_found (it was refused), or error (the
// ledger or the follower failed; a FAIL whose follow-up failed is answered
// 200 and still counted as error). Every series starts at zero.
//
// unauthorized is counted when the verifier runs as Config.Auth, which the
// routes run first. If the routes are instead mounted behind a router-level
// verifier, refusals never reach this package and only the app's
// http_requests_total{status="401"} sees them — and do not do both: a
// request verified twice is refused the second time as a replay. Bodies
// over the app's body limit are refused by the HTTP server before any
// route runs; http_requests_total{status="413"} counts them.
package webhooks
