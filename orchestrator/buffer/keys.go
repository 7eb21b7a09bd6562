package buffer

import (
	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
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

// RedisKeys are the buffer's keys with the default prefix "flowgate": its
// part of docs/keyspace.md, which is made from them. The buffer's own state
// sits under one hash tag per shard (Config.Shards, REDIS_SHARDS; package
// shard): <tag> is "{buffer}" with one shard, shard i's tag
// "{buffer:<i>.<salt>}" with several. Every key one admission, give-back,
// flush or reconcile script touches is of one shard, so on Redis Cluster
// each runs on the master owning that shard's slot; a message's errors
// have their own tag. A claim whose task does not exist is resumed by the
// next enqueue of its key (same messageId and queue): never a false
// DUPLICATE_MESSAGE.
//
// Asynq's own keys read for the depth reconcile, the claim check and the
// listing (list.go: listScript over the lists, ZRANGEBYSCORE over the
// sets, the type from each task's "msg"; asynq internal/base):
// asynq:{<queue>}:pending|active LIST, :scheduled|:retry|:archived|:completed
// ZSET, asynq:{<queue>}:t:<id> HASH (a task), whose "result" field the
// buffer writes as Asynq's ResultWriter does (HSET), on the auto-pipelined
// client (writeResult), and whose "msg" (the protobuf TaskMessage) a
// replay rewrites with retried = 0 (replayScript). The four queues are
// Asynq's and are not sharded (docs/scale-out.md).
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/buffer"
	return []keyspace.Key{
		{Pattern: "flowgate:buffer:<tag>:depth", Type: keyspace.String, Owner: o,
			What: "messages admitted to the shard and not finished: the backpressure counter, at most the shard's " +
				"share of `BUFFER_MAX_QUEUE_SIZE`, reconciled with Asynq's queues every 10 s"},
		{Pattern: "flowgate:buffer:<tag>:credit", Type: keyspace.Hash, Owner: o,
			TTL:  "fields dropped after 5 s untouched (`creditStale`)",
			What: "place credit in the shard (`depth.go`): instance id → `<places>:<touched at, Redis TIME ms>`, summed by the reconcile"},
		{Pattern: "flowgate:buffer:<tag>:idem:<key>", Type: keyspace.String, Owner: o,
			TTL:  "the longer retention + 101 × the backoff cap + 1 min (≈ 7 days; `claimTTL`)",
			What: "idempotency claim `<messageId> <queue> <claimed at>`, in the key's shard"},
		{Pattern: "flowgate:buffer:<tag>:id:<messageId>", Type: keyspace.String, Owner: o, TTL: "same",
			What: "claim of a client-chosen messageId (unique across the four queues and the shards), in the id's shard"},
		{Pattern: "flowgate:buffer:<tag_0>:dlqcount", Type: keyspace.String, Owner: o,
			What: "dead letters, for the alert, reconciled with the DLQ records (shard 0 only: it is not hot)"},
		{Pattern: "flowgate:buffer:<tag_0>:dlqalert", Type: keyspace.String, Owner: o,
			What: "set while over `BUFFER_DLQ_ALERT_THRESHOLD` (one alert per crossing; shard 0 only)"},
		{Pattern: "flowgate:buffer:err:{<messageId>}", Type: keyspace.List, Owner: o,
			TTL: "`BUFFER_FAILED_RETENTION` (7 days)", What: "one BufferError per failed attempt"},
		{Pattern: "flowgate:buffer:events", Type: keyspace.Channel, Owner: o,
			What: "BufferEvent JSON (published only while subscribed)"},
	}
}

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
