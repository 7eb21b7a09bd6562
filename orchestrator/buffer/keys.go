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

// Keys (prefix defaults to "flowgate"). The buffer's own state sits under
// one hash tag per shard (Config.Shards, REDIS_SHARDS; package shard):
// <tag> is "{buffer}" with one shard (these keys exactly), shard i's tag
// "{buffer:<i>.<salt>}" with several. Every key one admission, give-back,
// flush or reconcile script touches is of one shard, so on Redis Cluster
// each runs on the master owning that shard's slot; a message's errors
// have their own tag.
//
//	<prefix>:buffer:<tag>:depth       STRING messages admitted to this shard
//	                                  and not yet finished (the backpressure
//	                                  counter, at most the shard's share of
//	                                  MaxQueueSize; reconciled with Asynq's
//	                                  queues)
//	<prefix>:buffer:<tag>:credit      HASH   place credit in this shard
//	                                  (depth.go): field = an instance's id,
//	                                  value "<places>:<touched at, unix ms of
//	                                  Redis TIME>"; summed by the reconcile,
//	                                  which drops fields untouched for
//	                                  creditStale
//	<prefix>:buffer:<tag>:idem:<key>  STRING claim "<messageId> <queue>
//	                                  <claimed at, unix ms>", in the key's
//	                                  shard (shard.Set.Of); TTL claimTTL while
//	                                  the message is queued, then its
//	                                  retention. A claim whose task does not
//	                                  exist is resumed by the next enqueue of
//	                                  the key (same messageId and queue):
//	                                  never a false DUPLICATE_MESSAGE
//	<prefix>:buffer:<tag>:id:<id>     STRING claim of a client-chosen
//	                                  messageId, in the id's shard (same
//	                                  value, TTL claimTTL, resumed the same
//	                                  way): unique across queues and shards
//	<prefix>:buffer:<tag0>:dlqcount   STRING dead letters (the alert counter;
//	                                  reconciled with the DLQ records): shard
//	                                  0 only, it is not hot
//	<prefix>:buffer:<tag0>:dlqalert   STRING set while the DLQ is over its
//	                                  alert threshold (one alert per crossing)
//	<prefix>:buffer:err:{<id>}        LIST   JSON BufferError per failed
//	                                  attempt (TTL: failed retention)
//	<prefix>:buffer:events            PUBSUB channel of BufferEvent JSON
//
// Asynq's own keys read for the depth reconcile, the claim check and the
// listing (list.go: listScript over the lists, ZRANGEBYSCORE over the
// sets, the type from each task's "msg"; asynq internal/base, stable since
// v0.18): asynq:{<queue>}:pending|active LIST,
// :scheduled|:retry|:archived|:completed ZSET, asynq:{<queue>}:t:<id> HASH (a task),
// whose "result" field the buffer writes as Asynq's ResultWriter does
// (HSET), on the auto-pipelined client (writeResult), and whose "msg"
// (the protobuf TaskMessage) a replay rewrites with retried = 0
// (replayScript). The four queues are Asynq's and
// are not sharded (docs/scale-out.md).

// stateKeys are one shard's state keys.
type stateKeys struct{ prefix, tag string }

// oneTag is the tag of the single shard (Shards 1).
const oneTag = "{buffer}"

func (k stateKeys) key(name string) string { return k.prefix + ":buffer:" + k.tag + ":" + name }
func (k stateKeys) depth() string          { return k.key("depth") }
func (k stateKeys) credit() string         { return k.key("credit") }
func (k stateKeys) idem(key string) string { return k.key("idem:" + key) }
func (k stateKeys) id(id string) string    { return k.key("id:" + id) }
func (k stateKeys) dlqCount() string       { return k.key("dlqcount") }
func (k stateKeys) alert() string          { return k.key("dlqalert") }

// depthKey and creditKey are the single shard's (tests of one gauge).
func depthKey(prefix string) string  { return stateKeys{prefix, oneTag}.depth() }
func creditKey(prefix string) string { return stateKeys{prefix, oneTag}.credit() }

func errKey(prefix, id string) string    { return prefix + ":buffer:err:{" + id + "}" }
func eventsChannel(prefix string) string { return prefix + ":buffer:events" }
func taskKey(queue, id string) string    { return "asynq:{" + queue + "}:t:" + id }
func pendingKey(queue string) string     { return "asynq:{" + queue + "}:pending" }
func archivedKey(queue string) string    { return "asynq:{" + queue + "}:archived" }
