// Package taskhttp serves the VM task queue of docs/tasks.md (the n8n "Phase 2:
// Orchestration & Management" workflow) over HTTP: Phase 1 creates tasks,
// VM workers claim them and send heartbeats, n8n-style admin calls move
// them. It decodes the wire shapes of package contracts, calls the
// tasks.Ledger and answers what the ledger decided; every error is the
// ledger's (or the decoder's) *contracts.Error, rendered by the app's one
// ErrorHandler (sidecar/web). The ACK and FAIL webhooks live in package
// webhooks.
//
// # Routes
//
//	POST  /queue                        CreateTaskRequest or {"tasks":[…]}  → 201/200 CreateResponse | BatchCreateResponse
//	GET   /queue?status=&queue_id=&encounter_id=&priority=&dlq=&history=&limit=&cursor=
//	                                                                      → 200 ListResponse
//	GET   /queue/stats                                                    → 200 StatsResponse
//	POST  /queue/claim                  ClaimRequest                      → 200 ClaimResponse | 204
//	GET   /queue/:queue_id                                                → 200 TaskResponse (with history)
//	PATCH /queue/:queue_id/status       StatusUpdateRequest               → 200 TaskResponse
//	PATCH /queue/:queue_id/requeue      RequeueRequest (body optional)    → 200 TaskResponse (noop reported)
//	POST  /queue/:queue_id/replay       RequeueRequest (body optional)    → 200 TaskResponse, through the Replayer
//	POST  /queue/:queue_id/heartbeat    HeartbeatRequest                  → 200 TaskResponse
//
// /queue/stats and /queue/claim are registered before /queue/:queue_id;
// "stats" and "claim" are not UUIDs, so they can never name a task.
//
// # Status codes
//
//   - POST /queue answers 201 Created when it created at least one task and
//     200 OK when every task was a duplicate (an existing task was answered
//     instead; duplicate is true on each). A body with a "tasks" member is a
//     batch (1..500 tasks, all or nothing), whatever else it holds.
//   - POST /queue/claim answers 200 with the claimed tasks, or 204 No Content
//     (no body) when none was pending — immediately, or after wait_ms when
//     it long-polls.
//   - 400 invalid: malformed JSON, a field of the wrong type, an invalid
//     value; Details["field"] names the body field or query parameter (GET
//     /queue: status, queue_id, encounter_id, priority, dlq, history, limit,
//     cursor). A path queue_id that is not a UUID is a 400 before Redis is
//     asked (the ledger checks it), whatever its length.
//   - 404 not_found: no task with that queue_id.
//   - 409 conflict: an illegal transition or a heartbeat from a worker not
//     holding the task; Details carry current_status and reason. PATCH
//     status of a dead letter may only amend it (status ERROR, and
//     parsed_payload.dlq true if parsed_payload is given); anything that
//     would take it out of the DLQ is reason "dead_letter": use POST
//     /queue/:queue_id/replay, which also clears its archived Asynq task.
//   - 413 too_large: the body is over the app's BodyLimit (rejected by the
//     HTTP server before any handler runs).
//   - 503 unavailable: Redis cannot be reached.
//
// Bodies are read as sent (Fiber's BodyRaw): a request with a
// Content-Encoding other than identity is refused with 400, so an
// authenticated client cannot make the server inflate a compression bomb.
//
// # Long poll
//
// A claim with wait_ms > 0 waits up to wait_ms (≤ 20000) for a task. The
// wait ends early, answering 204, when Config.Shutdown is done, when the
// HTTP server shuts down, or when the client hangs up; the last is seen by
// peeking at the connection's socket every Config.DisconnectCheck (on
// Unix; elsewhere only the first two apply). Ending the wait never cuts a
// try under way (tasks.Ledger.ClaimPolling): its tasks are answered, or
// put back if the client is gone. Tasks claimed at the very
// moment the client hung up are put back to PENDING in their old place
// (tasks.Ledger.Unclaim, only while they are still held by that claim)
// rather than left PROCESSING until a sweep recovers them at the cost of
// an attempt.
//
// # A claim answered 503
//
// When Redis hangs past the request's deadline, the claim answers 503 but
// Redis may run its script afterwards. The ledger reports that as a
// tasks.UncertainClaimError with the claim's token, and the handler cancels
// the token in the background (tasks.Ledger.CancelClaim, retried for
// Config.CancelWindow): a worker told that its claim failed never keeps a
// task. Handlers.Wait waits for those cancellations at shutdown.
//
// # Authentication
//
// Config.Auth (normally signature.Verifier.Middleware()) runs before each
// queue route, and only for those routes. Leave it nil when the router
// given to Register already authenticates: a request verified twice is
// refused the second time as a replay.
//
// Auth runs within Config.RequestTimeout from the request's start on every
// route, the claim included (its long poll gets wait_ms more, counted from
// the same start): with Redis hung, the signature's replay check answers
// 503 after RequestTimeout, and every request's Redis work, signature
// check included, ends within RequestTimeout (+ a claim's wait_ms).
package taskhttp
