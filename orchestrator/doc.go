// Package orchestrator wires flowgate's durable work onto Asynq: the queues
// and their weights, the ServeMux that domain packages register handlers on,
// per-task-type retry policies behind one RetryDelayFunc, the error handler
// that writes every final failure into the durable dead-letter record
// (package dlq), and the N asynq.Server dequeuers a process runs.
//
// Queues and weights (asynq's weighted, non-strict priority: a worker picks
// a queue with probability weight/sum, so lower queues never starve):
//
//	critical 6  – caller-facing work that must not wait (booking retries)
//	high     4  – requeues after a worker FAIL, SLA escalations
//	default  2  – ordinary background work
//	low      1  – maintenance, bulk replays
//
// Domain packages live in subpackages (tasks, dlq, …) and know nothing of
// one another; the sidecar composition root connects them.
package orchestrator
