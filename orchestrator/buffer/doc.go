// Package buffer is flowgate's work buffer (docs/buffer.md)
// on Asynq and Redis: typed handlers behind one small interface, four
// priorities, per-type exponential backoff, a retry classifier, idempotency
// keys, backpressure, per-type circuit breakers, and the dead-letter queue
// of package dlq.
//
// Mapping of the seed onto Asynq:
//
//   - A message is an Asynq task on one of the buffer's own queues
//     buffer.critical, buffer.high, buffer.default, buffer.low (priority 0..3),
//     task id = messageId. The task payload carries the enqueue-time message;
//     the task result (its "result" field, written as ResultWriter does,
//     through the auto-pipelined client) carries the completion record; Asynq's
//     Retention keeps completed messages for BUFFER_COMPLETED_RETENTION (24 h).
//   - The buffer runs its own asynqrt.Runtime with StrictPriority: the
//     seed claims "priority ASC, createdAt ASC", so a CRITICAL message is
//     always taken before a NORMAL one. Strict priority can starve LOW under
//     a sustained CRITICAL load — that is the seed's semantics — and because
//     the buffer has its own dequeuers, flowgate's other queues (booking,
//     VM tasks) keep their weighted, non-starving servers.
//   - Atomic claiming, visibility timeout and stuck-message recovery are
//     Asynq's dequeue script and lease (a crashed worker's task is retried
//     when its 30 s lease expires; a graceful stop re-queues in-flight work).
//     A handler that outlives Timeout() fails with MESSAGE_TIMEOUT and takes
//     the failure path.
//   - Retry delays are min(base·multiplier^n, max) (seed: 1 s, 2, 60 s), per
//     handler type, through the runtime's RetryDelayFunc. The decision to
//     retry is Handler.OnError, whose default is Retryable (the seed's retry
//     decision logic). A message that may not retry, or has used its
//     retries (MAX_RETRIES_EXCEEDED), is archived by Asynq and written to the
//     durable dead-letter record by the runtime's error handler.
//   - Admission is one script (scripts.go) over keys of one hash tag: the
//     idempotency claim, the claim of a client-chosen messageId (unique
//     across the four queues) and the capacity reservation on a depth
//     counter, shared by the enqueues that arrive while one call is in
//     flight (admission.go). A claim holds "<messageId> <queue> <claimed
//     at>", has a TTL (claimTTL), and answers DUPLICATE_MESSAGE while the
//     original's task exists (queued or retained), so a 409 always names a
//     message that exists. A claim whose task is missing (the enqueue died
//     or is still in flight: a crash, a paused Redis) is resumed by the next
//     enqueue of its key: same messageId, same queue, so that enqueue and a
//     late write of the original are one Asynq task id and only one lands.
//     Claims are kept after an enqueue error (only an encoding failure
//     gives them back). An admission call also reserves places ahead
//     for this instance (placeCredit, depth.go: at most 64, 1/32 of the
//     maximum, only below half of it), which enqueues without a key then
//     take with no Redis call; unused credit is given back within two
//     DepthRefresh intervals and on Stop. Each instance's credit is also
//     a field of a hash beside the counter, moved by deltas in the same
//     scripts as the counter, so every instance's re-set counts it.
//   - The depth counter is moved by admissions, by finished messages (one
//     subtraction per DepthRefresh) and replays, and re-set every
//     DepthReconcile, which heals drift, to Asynq's list and sorted-set
//     sizes of the four queues (one pipelined round trip of O(1) commands,
//     never a scan) plus the credit fields touched within
//     max(10 × DepthRefresh, 5 s); older ones (a crashed instance's) are
//     dropped.
//   - Asynq's enqueue (one EVALSHA per task) goes through go-redis's
//     AutoPipeliner, so concurrent enqueues share round trips.
//   - Circuit breakers (sony/gobreaker) are per instance: each instance
//     judges the downstream from its own calls without a Redis round trip per
//     message; with N instances a failing downstream sees at most
//     N × threshold calls before every breaker is open. An open breaker
//     defers the task (asynqrt.Defer) so no attempt is burnt.
package buffer
