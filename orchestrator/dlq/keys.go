package dlq

import (
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the records' keys with the production prefix "flowgate":
// its part of docs/keyspace.md, which is made from them. Both keys of one
// queue share the hash tag {<queue>} so the record script runs on Redis
// Cluster.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/dlq"
	return []keyspace.Key{
		{Pattern: recKey("flowgate", "<queue>"), Type: keyspace.Hash, Owner: o,
			TTL:  "— (buffer queues: purged after `BUFFER_FAILED_RETENTION`)",
			What: "task id → durable dead-letter record, JSON Record (every Asynq queue, `buffer.*` included)"},
		{Pattern: idxKey("flowgate", "<queue>"), Type: keyspace.ZSet, Owner: o, TTL: "same",
			What: "task id → failed_at ms"},
	}
}

func recKey(prefix, queue string) string { return prefix + ":dlq:{" + queue + "}:rec" }
func idxKey(prefix, queue string) string { return prefix + ":dlq:{" + queue + "}:idx" }

// recordScript writes one record.
//
//	KEYS[1] rec hash, KEYS[2] idx zset
//	ARGV[1] task id, ARGV[2] record JSON, ARGV[3] failed_at unix ms,
//	ARGV[4] "nx" (keep an existing record: reconciler) or "set" (overwrite:
//	        error handler, which knows the latest error)
//	returns recordNew when the id was not recorded before, else recordKnown
var recordScript = redis.NewScript(`
local isNew = redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0
if not isNew and ARGV[4] == 'nx' then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
if isNew then return 1 end
return 0
`)

// recordScript's replies.
const (
	recordKnown = 0 // the id was recorded before
	recordNew   = 1 // the id was not recorded before
)

// deleteScript removes one record.
//
//	KEYS[1] rec hash, KEYS[2] idx zset; ARGV[1] task id
//	returns deleteRemoved when a record was removed, else deleteNone
var deleteScript = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])
`)

// deleteScript's replies.
const (
	deleteNone    = 0 // no record of the id
	deleteRemoved = 1 // the record was removed
)
