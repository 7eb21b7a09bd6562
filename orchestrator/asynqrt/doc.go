// Package asynqrt is flowgate's Asynq runtime (the name says so and stays
// clear of asynq's own package and of the domains' "jobs"): the queues and
// their weights, the ServeMux that domain packages register handlers on,
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
// The domains (booking, the buffer, the VM tasks) register their task types
// on a Runtime; the sidecar composition root creates it and connects them.
// Which package may import which is docs/architecture.md's, held by
// test/architecture_test.go.
package asynqrt
