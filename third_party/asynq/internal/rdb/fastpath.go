// Copyright 2020 Kentaro Hibino. All rights reserved.
// Use of this source code is governed by a MIT license
// that can be found in the LICENSE file.

// flowgate patch (third_party/asynq/PATCH.md): one script call per task on
// the hot path. Dequeue tries every queue in one script instead of one per
// queue, and CompleteAndDequeue completes a task and dequeues the next in
// one script. Both touch keys of several queues (different hash slots), so
// they run only on a non-cluster client; a cluster client keeps upstream's
// per-queue calls.

package rdb

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hibiken/asynq/internal/base"
	"github.com/hibiken/asynq/internal/errors"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cast"
)

// dequeueLua pops a task off the first queue, in KEYS order, that is not
// paused and not empty: dequeueCmd's body once per queue.
//
// Input (from KEYS offset 0-based K, ARGV offset A):
// KEYS[K+4i+1] -> asynq:{<qname_i>}:pending
// KEYS[K+4i+2] -> asynq:{<qname_i>}:paused
// KEYS[K+4i+3] -> asynq:{<qname_i>}:active
// KEYS[K+4i+4] -> asynq:{<qname_i>}:lease
// --
// ARGV[A+1] -> initial lease expiration Unix time
// ARGV[A+2+i] -> task key prefix of qname_i
//
// Output: the encoded TaskMessage, or nil when every queue is paused or
// empty.
const dequeueLua = `
local n = (#KEYS - K) / 4
for i = 0, n - 1 do
	local k = K + 4 * i
	if redis.call("LLEN", KEYS[k+1]) > 0 and redis.call("EXISTS", KEYS[k+2]) == 0 then
		local id = redis.call("RPOPLPUSH", KEYS[k+1], KEYS[k+3])
		if id then
			local key = ARGV[A+2+i] .. id
			redis.call("HSET", key, "state", "active")
			redis.call("HDEL", key, "pending_since")
			redis.call("ZADD", KEYS[k+4], ARGV[A+1], id)
			return redis.call("HGET", key, "msg")
		end
	end
end
return nil`

// dequeueMultiCmd is dequeueLua from the first key and argument.
var dequeueMultiCmd = redis.NewScript("local K, A = 0, 0\n" + dequeueLua)

// completeAndDequeueCmd is doneCmd, doneUniqueCmd, markAsCompleteCmd or
// markAsCompleteUniqueCmd (ARGV[4], ARGV[7]), with WriteResult's HSET
// folded into the completion's (ARGV[8]), then dequeueLua.
//
// KEYS[1] -> asynq:{<qname>}:active
// KEYS[2] -> asynq:{<qname>}:lease
// KEYS[3] -> asynq:{<qname>}:t:<task_id>
// KEYS[4] -> asynq:{<qname>}:processed:<yyyy-mm-dd>
// KEYS[5] -> asynq:{<qname>}:processed
// KEYS[6] -> asynq:{<qname>}:completed
// KEYS[7] -> unique key (KEYS[3] when the task has none)
// KEYS[8...] -> dequeueLua's keys
// -------
// ARGV[1] -> task ID
// ARGV[2] -> stats expiration timestamp
// ARGV[3] -> max int64 value
// ARGV[4] -> "1": keep the task as completed (retention), else delete it
// ARGV[5] -> task expiration time in unix time (retention)
// ARGV[6] -> task message data (retention)
// ARGV[7] -> "1": the task has a unique key
// ARGV[8] -> "1": ARGV[9] is the task's result (retention)
// ARGV[9] -> the task's result
// ARGV[10...] -> dequeueLua's arguments
var completeAndDequeueCmd = redis.NewScript(`
if redis.call("LREM", KEYS[1], 0, ARGV[1]) == 0 then
  return redis.error_reply("NOT FOUND")
end
if redis.call("ZREM", KEYS[2], ARGV[1]) == 0 then
  return redis.error_reply("NOT FOUND")
end
if ARGV[4] == "1" then
  if redis.call("ZADD", KEYS[6], ARGV[5], ARGV[1]) ~= 1 then
    return redis.error_reply("INTERNAL")
  end
  if ARGV[8] == "1" then
    redis.call("HSET", KEYS[3], "msg", ARGV[6], "state", "completed", "result", ARGV[9])
  else
    redis.call("HSET", KEYS[3], "msg", ARGV[6], "state", "completed")
  end
elseif redis.call("DEL", KEYS[3]) == 0 then
  return redis.error_reply("NOT FOUND")
end
local n = redis.call("INCR", KEYS[4])
if tonumber(n) == 1 then
	redis.call("EXPIREAT", KEYS[4], ARGV[2])
end
local total = redis.call("GET", KEYS[5])
if tonumber(total) == tonumber(ARGV[3]) then
	redis.call("SET", KEYS[5], 1)
else
	redis.call("INCR", KEYS[5])
end
if ARGV[7] == "1" and redis.call("GET", KEYS[7]) == ARGV[1] then
  redis.call("DEL", KEYS[7])
end
local K, A = 7, 9
` + dequeueLua)

// MultiQueueScripts reports whether scripts over the keys of several
// queues may run: on a non-cluster client, until the server refused one
// (CROSSSLOT: a cluster-enabled server behind a plain client).
func (r *RDB) MultiQueueScripts() bool {
	_, plain := r.client.(*redis.Client)
	return plain && !r.crossSlot.Load()
}

// refused notes a CROSSSLOT refusal, after which the multi-queue scripts
// are not used again.
func (r *RDB) refused(err error) bool {
	if err != nil && strings.Contains(err.Error(), "CROSSSLOT") {
		r.crossSlot.Store(true)
		return true
	}
	return false
}

// completeBatch is the batch of completeAndDequeueCmd calls (batch.go).
func (r *RDB) completeBatch() *scriptBatch {
	r.batchOnce.Do(func() { r.batch = &scriptBatch{client: r.client, script: completeAndDequeueCmd} })
	return r.batch
}

// appendDequeueArgs appends dequeueLua's keys and arguments for qnames.
func appendDequeueArgs(keys []string, argv []interface{}, lease time.Time, qnames []string) ([]string, []interface{}) {
	argv = append(argv, lease.Unix())
	for _, q := range qnames {
		keys = append(keys, base.PendingKey(q), base.PausedKey(q), base.ActiveKey(q), base.LeaseKey(q))
		argv = append(argv, base.TaskKeyPrefix(q))
	}
	return keys, argv
}

// decodeDequeued decodes a dequeue script's reply.
func decodeDequeued(op errors.Op, res interface{}) (*base.TaskMessage, error) {
	encoded, err := cast.ToStringE(res)
	if err != nil {
		return nil, errors.E(op, errors.Internal, fmt.Sprintf("cast error: unexpected return value from Lua script: %v", res))
	}
	msg, err := base.DecodeMessage([]byte(encoded))
	if err != nil {
		return nil, errors.E(op, errors.Internal, fmt.Sprintf("cannot decode message: %v", err))
	}
	return msg, nil
}

// dequeueMulti is Dequeue over several queues in one script call. ok is
// false when the script could not run here (CROSSSLOT): then nothing was
// dequeued.
func (r *RDB) dequeueMulti(qnames []string) (msg *base.TaskMessage, leaseExpirationTime time.Time, ok bool, err error) {
	var op errors.Op = "rdb.Dequeue"
	leaseExpirationTime = r.clock.Now().Add(LeaseDuration)
	keys, argv := appendDequeueArgs(make([]string, 0, 4*len(qnames)), make([]interface{}, 0, 1+len(qnames)), leaseExpirationTime, qnames)
	res, err := dequeueMultiCmd.Run(context.Background(), r.client, keys, argv...).Result()
	switch {
	case err == redis.Nil:
		return nil, time.Time{}, true, errors.E(op, errors.NotFound, errors.ErrNoProcessableTask)
	case r.refused(err):
		return nil, time.Time{}, false, nil
	case err != nil:
		return nil, time.Time{}, true, errors.E(op, errors.Unknown, fmt.Sprintf("redis eval error: %v", err))
	}
	msg, err = decodeDequeued(op, res)
	if err != nil {
		return nil, time.Time{}, true, err
	}
	return msg, leaseExpirationTime, true, nil
}

// CompleteAndDequeue does what WriteResult(result) (unless result is nil),
// then Done (or MarkAsComplete, for a task with a retention) do to msg,
// and then what Dequeue(qnames...) does, in one script call. (Without a
// retention Done deletes the task, result and all.) completed reports whether msg was completed; when it was
// not, err is the completion's error (as Done's and MarkAsComplete's) and
// nothing was dequeued. next is the task dequeued with its lease
// expiration, nil when every queue is paused or empty (or when it could
// not be decoded: then err says so, and the task is left to the
// recoverer, as Dequeue leaves one). Callers check MultiQueueScripts
// first. The calls of concurrent workers share round trips (batch.go).
func (r *RDB) CompleteAndDequeue(ctx context.Context, msg *base.TaskMessage, result []byte, qnames ...string) (next *base.TaskMessage, leaseExpirationTime time.Time, completed bool, err error) {
	var op errors.Op = "rdb.CompleteAndDequeue"
	now := r.clock.Now()
	retain, unique, encoded, hasResult := "0", "0", "", "0"
	uniqueKey := base.TaskKey(msg.Queue, msg.ID)
	if msg.Retention > 0 {
		retain = "1"
		msg.CompletedAt = now.Unix()
		b, err := base.EncodeMessage(msg)
		if err != nil {
			return nil, time.Time{}, false, errors.E(op, errors.Unknown, fmt.Sprintf("cannot encode message: %v", err))
		}
		encoded = string(b)
	}
	if len(msg.UniqueKey) > 0 {
		unique, uniqueKey = "1", msg.UniqueKey
	}
	if result != nil {
		hasResult = "1"
	} else {
		result = []byte{}
	}
	keys := make([]string, 0, 7+4*len(qnames))
	keys = append(keys,
		base.ActiveKey(msg.Queue),
		base.LeaseKey(msg.Queue),
		base.TaskKey(msg.Queue, msg.ID),
		base.ProcessedKey(msg.Queue, now),
		base.ProcessedTotalKey(msg.Queue),
		base.CompletedKey(msg.Queue),
		uniqueKey,
	)
	argv := make([]interface{}, 0, 10+len(qnames))
	argv = append(argv,
		msg.ID,
		now.Add(statsTTL).Unix(),
		int64(math.MaxInt64),
		retain,
		now.Unix()+msg.Retention,
		encoded,
		unique,
		hasResult,
		result,
	)
	leaseExpirationTime = now.Add(LeaseDuration)
	keys, argv = appendDequeueArgs(keys, argv, leaseExpirationTime, qnames)
	res, err := r.completeBatch().run(ctx, keys, argv)
	switch {
	case err == redis.Nil:
		return nil, time.Time{}, true, nil
	case err != nil:
		r.refused(err)
		return nil, time.Time{}, false, errors.E(op, errors.Unknown, fmt.Sprintf("redis eval error: %v", err))
	}
	next, err = decodeDequeued(op, res)
	if err != nil {
		return nil, time.Time{}, true, err
	}
	return next, leaseExpirationTime, true, nil
}
