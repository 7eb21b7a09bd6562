package slots

import "github.com/redis/go-redis/v9"

// putScript replaces one cached list and registers it.
//
//	KEYS[1] registry   KEYS[2] entry
//	ARGV[1] now, Unix ms   ARGV[2] TTL ms
//	ARGV[3..] field, value pairs ("_meta" first, then one per slot)
//
// Returns 1.
var putScript = redis.NewScript(`
redis.call('DEL', KEYS[2])
local chunk = 200 -- even, so pairs stay whole; bounds unpack()
for i = 3, #ARGV, chunk do
  redis.call('HSET', KEYS[2], unpack(ARGV, i, math.min(i + chunk - 1, #ARGV)))
end
local ttl = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + ttl, KEYS[2])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`)

// invalidateScript removes one slot from every cached list.
//
//	KEYS[1] registry
//	ARGV[1] now, Unix ms   ARGV[2] SlotID
//
// Returns how many lists held the slot.
var invalidateScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = 0
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  n = n + redis.call('HDEL', k, ARGV[2])
end
return n
`)

// findScript looks one slot up in the cached lists.
//
//	KEYS[1] registry
//	ARGV[1] now, Unix ms   ARGV[2] SlotID
//
// Returns the slot's JSON from the first list that holds it, or nil.
var findScript = redis.NewScript(`
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')) do
  local v = redis.call('HGET', k, ARGV[2])
  if v then return v end
end
return false
`)

// deleteScript drops one cached list.
//
//	KEYS[1] registry   KEYS[2] entry
//
// Returns 1 if the list existed, else 0.
var deleteScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], KEYS[2])
return redis.call('DEL', KEYS[2])
`)
