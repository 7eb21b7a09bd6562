package buffer

import (
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Queue names, one per priority (index = priority).
var queueNames = [4]string{"buffer.critical", "buffer.high", "buffer.default", "buffer.low"}

// QueueFor maps a priority onto its Asynq queue.
func QueueFor(p contracts.BufferPriority) string { return queueNames[p] }

// Queues lists the buffer's queues, CRITICAL first.
func Queues() []string { return append([]string(nil), queueNames[:]...) }

// queueWeights are the StrictPriority order: higher weight drains first.
func queueWeights() map[string]int {
	return map[string]int{queueNames[0]: 4, queueNames[1]: 3, queueNames[2]: 2, queueNames[3]: 1}
}

// Keys (prefix defaults to "flowgate"). Every key has its own hash tag; no
// script touches two keys.
//
//	<prefix>:buffer:idem:{<key>}   STRING original messageId; no TTL while the
//	                               original is pending, then its retention
//	<prefix>:buffer:err:{<id>}     LIST   JSON BufferError per failed attempt
//	                               (TTL: failed retention)
//	<prefix>:buffer:dlqalert       STRING set while the DLQ is over its alert
//	                               threshold (one alert per crossing)
//	<prefix>:buffer:events         PUBSUB channel of BufferEvent JSON
//
// Asynq's own keys read for backpressure (asynq internal/base, stable since
// v0.18): asynq:{<queue>}:pending|active LIST, :scheduled|:retry ZSET.
func idemKey(prefix, key string) string  { return prefix + ":buffer:idem:{" + key + "}" }
func errKey(prefix, id string) string    { return prefix + ":buffer:err:{" + id + "}" }
func alertKey(prefix string) string      { return prefix + ":buffer:dlqalert" }
func eventsChannel(prefix string) string { return prefix + ":buffer:events" }

// claimIdemScript claims an idempotency key for a message.
//
//	KEYS[1] idem key; ARGV[1] messageId
//	returns "" when claimed, else the original messageId
var claimIdemScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return '' end
return redis.call('GET', KEYS[1])
`)

// releaseIdemScript drops or times out an idempotency key only while it
// still names the message (a later claimant is never touched).
//
//	KEYS[1] idem key; ARGV[1] messageId; ARGV[2] TTL ms (0: delete)
//	returns 1 when changed, else 0
var releaseIdemScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then return redis.call('DEL', KEYS[1]) end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`)
