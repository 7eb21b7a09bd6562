package buffer

import (
	"github.com/flowgate/flowgate/contracts"
)

// Queue names, one per priority (index = priority).
var queueNames = [4]string{"buffer.critical", "buffer.high", "buffer.default", "buffer.low"}

// QueueFor maps a priority onto its Asynq queue.
func QueueFor(p contracts.BufferPriority) string { return queueNames[p] }

// priorityOf is QueueFor's inverse: the priority whose queue is q.
func priorityOf(q string) (contracts.BufferPriority, bool) {
	for i, n := range queueNames {
		if n == q {
			return contracts.BufferPriority(i), true
		}
	}
	return 0, false
}

// Queues lists the buffer's queues, CRITICAL first.
func Queues() []string { return append([]string(nil), queueNames[:]...) }

// queueWeights are the StrictPriority order: higher weight drains first.
func queueWeights() map[string]int {
	return map[string]int{queueNames[0]: 4, queueNames[1]: 3, queueNames[2]: 2, queueNames[3]: 1}
}

// Keys (prefix defaults to "flowgate"). The buffer's own state shares the
// hash tag {buffer}, so the admission and alert scripts (scripts.go) touch
// keys of one slot on Redis Cluster; a message's errors have their own.
//
//	<prefix>:buffer:{buffer}:depth       STRING messages admitted and not yet
//	                                     finished (the backpressure counter;
//	                                     reconciled with Asynq's queues)
//	<prefix>:buffer:{buffer}:credit      HASH   place credit (depth.go): field =
//	                                     an instance's id, value "<places>:
//	                                     <touched at, unix ms of Redis TIME>";
//	                                     summed by the reconcile, which drops
//	                                     fields untouched for creditStale
//	<prefix>:buffer:{buffer}:idem:<key>  STRING claim "<messageId> <queue>
//	                                     <claimed at, unix ms>"; TTL claimTTL
//	                                     while the message is queued, then its
//	                                     retention. A claim whose task does not
//	                                     exist is resumed by the next enqueue of
//	                                     the key (same messageId and queue):
//	                                     never a false DUPLICATE_MESSAGE
//	<prefix>:buffer:{buffer}:id:<id>     STRING claim of a client-chosen
//	                                     messageId (same value, TTL claimTTL,
//	                                     resumed the same way): unique across
//	                                     queues
//	<prefix>:buffer:{buffer}:dlqcount    STRING dead letters (the alert counter;
//	                                     reconciled with the DLQ records)
//	<prefix>:buffer:{buffer}:dlqalert    STRING set while the DLQ is over its
//	                                     alert threshold (one alert per crossing)
//	<prefix>:buffer:err:{<id>}           LIST   JSON BufferError per failed
//	                                     attempt (TTL: failed retention)
//	<prefix>:buffer:events               PUBSUB channel of BufferEvent JSON
//
// Asynq's own keys read for the depth reconcile and the claim check (asynq
// internal/base, stable since v0.18): asynq:{<queue>}:pending|active LIST,
// :scheduled|:retry ZSET, asynq:{<queue>}:t:<id> HASH (a task), whose
// "result" field the buffer writes as Asynq's ResultWriter does (HSET), on
// the auto-pipelined client (writeResult).
func stateKey(prefix, name string) string { return prefix + ":buffer:{buffer}:" + name }
func depthKey(prefix string) string       { return stateKey(prefix, "depth") }
func creditKey(prefix string) string      { return stateKey(prefix, "credit") }
func idemKey(prefix, key string) string   { return stateKey(prefix, "idem:"+key) }
func idKey(prefix, id string) string      { return stateKey(prefix, "id:"+id) }
func dlqCountKey(prefix string) string    { return stateKey(prefix, "dlqcount") }
func alertKey(prefix string) string       { return stateKey(prefix, "dlqalert") }
func errKey(prefix, id string) string     { return prefix + ":buffer:err:{" + id + "}" }
func eventsChannel(prefix string) string  { return prefix + ":buffer:events" }
func taskKey(queue, id string) string     { return "asynq:{" + queue + "}:t:" + id }
