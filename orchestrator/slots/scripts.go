package slots

import "github.com/redis/go-redis/v9"

// putScript replaces one cached list (and its pre-grouped companion) and
// registers it. Every script that changes a list sets its "_v" to a new
// value of the version counter <registry>:ver, so a reader can tell in one
// HMGET of "_v" and "_meta" whether its decoded copy is current
// (Cache.stamp).
//
//	KEYS[1] registry   KEYS[2] entry   KEYS[3] entry's pre-grouped key
//	KEYS[4] the booked keys' prefix (keys.booked(""))
//	ARGV[1] now, Unix ms   ARGV[2] TTL ms
//	ARGV[3] pre-grouped JSON, "" for none (the key is deleted)
//	ARGV[4..] field, value pairs ("_meta" first, then one per slot)
//
// A slot whose booked key exists (bookedScript: booked after the list was
// fetched) is left out, the _meta count lowered by as many, and the
// pre-grouped value, which may pair it, is not stored (the key is
// deleted; regrouped on the next read).
//
// Returns 1.
var putScript = redis.NewScript(`
redis.call('DEL', KEYS[2])
local fields = {ARGV[4], ARGV[5]}
local skipped = 0
for i = 6, #ARGV, 2 do
  if redis.call('EXISTS', KEYS[4] .. ARGV[i]) == 1 then
    skipped = skipped + 1
  else
    fields[#fields + 1] = ARGV[i]
    fields[#fields + 1] = ARGV[i + 1]
  end
end
if skipped > 0 then
  fields[2] = string.gsub(fields[2], '"count":(%d+)', function(c) return '"count":' .. (tonumber(c) - skipped) end, 1)
end
local chunk = 200 -- even, so pairs stay whole; bounds unpack()
for i = 1, #fields, chunk do
  redis.call('HSET', KEYS[2], unpack(fields, i, math.min(i + chunk - 1, #fields)))
end
redis.call('HSET', KEYS[2], '_v', redis.call('INCR', KEYS[1] .. ':ver'))
local ttl = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
if ARGV[3] == '' or skipped > 0 then
  redis.call('DEL', KEYS[3])
else
  redis.call('SET', KEYS[3], ARGV[3], 'PX', ttl)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + ttl, KEYS[2])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`)

// invalidateScript removes one slot from every cached list; a list that
// held it records it in "_lastInvalidated" and loses its pre-grouped
// companion (<entry>:pg, regrouped on the next read).
//
//	KEYS[1] registry
//	ARGV[1] now, Unix ms   ARGV[2] SlotID   ARGV[3] "_lastInvalidated" value
//
// Returns how many lists held the slot.
var invalidateScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = 0
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('HDEL', k, ARGV[2]) == 1 then
    n = n + 1
    redis.call('HSET', k, '_lastInvalidated', ARGV[3], '_v', redis.call('INCR', KEYS[1] .. ':ver'))
    redis.call('DEL', k .. ':pg')
  end
end
return n
`)

// restoreScript puts one slot back into every cached list that covers it:
// same location, the list's schedule views include the slot's (or the list
// has every view), and its date lies in from..to. Such a list records it
// in "_lastRestored" and loses its pre-grouped companion.
//
//	KEYS[1] registry   KEYS[2] the slot's booked key
//	ARGV[1] now, Unix ms   ARGV[2] SlotID   ARGV[3] slot JSON
//	ARGV[4] location GUID, upper-case   ARGV[5] view GUID, upper-case
//	ARGV[6] date YYYY-MM-DD   ARGV[7] "_lastRestored" value
//
// The slot's booked key (bookedScript) is deleted: it is open again.
//
// Returns how many lists took the slot.
var restoreScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('DEL', KEYS[2])
local n = 0
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local raw = redis.call('HGET', k, '_meta')
  if raw then
    local m = cjson.decode(raw)
    local views = string.upper(m.scheduleViewGUID or '')
    if string.upper(m.locationGUID or '') == ARGV[4] and m.from <= ARGV[6] and ARGV[6] <= m.to
      and (views == '' or string.find(',' .. views .. ',', ',' .. ARGV[5] .. ',', 1, true)) then
      redis.call('HSET', k, ARGV[2], ARGV[3], '_lastRestored', ARGV[7], '_v', redis.call('INCR', KEYS[1] .. ':ver'))
      redis.call('DEL', k .. ':pg')
      n = n + 1
    end
  end
end
return n
`)

// findScript looks one slot up in the cached lists, then among the slots
// booked lately.
//
//	KEYS[1] registry   KEYS[2] the slot's booked key
//	ARGV[1] now, Unix ms   ARGV[2] SlotID
//
// Returns the slot's JSON from the first list that holds it, or nil.
var findScript = redis.NewScript(`
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')) do
  local v = redis.call('HGET', k, ARGV[2])
  if v then return v end
end
return redis.call('GET', KEYS[2])
`)

// bookedScript removes a booked slot from every cached list (as
// invalidateScript) and remembers it for a while under its booked key, so
// the same booking asked again still finds its bookingToken's slot.
//
//	KEYS[1] registry   KEYS[2] the slot's booked key
//	ARGV[1] now, Unix ms   ARGV[2] SlotID   ARGV[3] "_lastInvalidated" value
//	ARGV[4] slot JSON   ARGV[5] how long to remember it, ms
//
// Returns how many lists held the slot.
var bookedScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = 0
local v = ARGV[4]
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local old = redis.call('HGET', k, ARGV[2])
  if old then
    v = old
    n = n + 1
    redis.call('HDEL', k, ARGV[2])
    redis.call('HSET', k, '_lastInvalidated', ARGV[3], '_v', redis.call('INCR', KEYS[1] .. ':ver'))
    redis.call('DEL', k .. ':pg')
  end
end
redis.call('SET', KEYS[2], v, 'PX', ARGV[5])
return n
`)

// deleteScript drops one cached list and its pre-grouped companion.
//
//	KEYS[1] registry   KEYS[2] entry   KEYS[3] entry's pre-grouped key
//
// Returns listDeleted if the list existed, else listAbsent.
var deleteScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], KEYS[2])
redis.call('DEL', KEYS[3])
return redis.call('DEL', KEYS[2])
`)

// deleteListsScript drops every search-range list of one location (and
// each one's pre-grouped companion); the tiers are left alone.
//
//	KEYS[1] registry
//	ARGV[1] now, Unix ms   ARGV[2] the location's list key prefix (keys.lists)
//
// Returns how many lists it deleted.
var deleteListsScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = 0
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(k, 1, #ARGV[2]) == ARGV[2] then
    n = n + redis.call('DEL', k)
    redis.call('DEL', k .. ':pg')
    redis.call('ZREM', KEYS[1], k)
  end
end
return n
`)

// deleteScript's replies.
const (
	listAbsent  = 0
	listDeleted = 1
)
