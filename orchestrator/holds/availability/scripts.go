package availability

import "github.com/redis/go-redis/v9"

// invalidateLua deletes the cached timeslots of the types whose (index,
// generation) key pairs follow KEYS[first]: every key in the index, the
// index itself, and INCR of the generation so a fill computed before the
// change is refused. Returns how many cache keys were deleted. The members
// are keys with the same hash tag as the index (one Cluster slot).
const invalidateLua = `
local function invalidate(first)
  local n = 0
  for i = first, #KEYS, 2 do
    for _, k in ipairs(redis.call('SMEMBERS', KEYS[i])) do
      n = n + redis.call('DEL', k)
    end
    redis.call('DEL', KEYS[i])
    redis.call('INCR', KEYS[i + 1])
  end
  return n
end
`

// invalidateScript invalidates the given types.
//
//	KEYS: (index, gen) per type
//	returns: cache keys deleted
var invalidateScript = redis.NewScript(invalidateLua + `return invalidate(1)`)

// updateScheduleScript stores a changed schedule if nobody changed it
// since it was read, and invalidates the affected types, in one step.
//
//	KEYS[1]: schedule hash; KEYS[2..]: (index, gen) per affected type
//	ARGV[1]: the version read ("0" when there was none)
//	ARGV[2]: the new schedule JSON
//	returns: -1 when the version moved (read again and retry), else the
//	         cache keys deleted
var updateScheduleScript = redis.NewScript(invalidateLua + `
local v = redis.call('HGET', KEYS[1], 'version') or '0'
if v ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'version', tonumber(v) + 1, 'doc', ARGV[2])
return invalidate(2)
`)

// seedScheduleScript stores the schedule file's content unless the stored
// copy came from the same file content (then admin changes made since are
// kept), invalidating every type of the old and the new schedule.
//
//	KEYS[1]: schedule hash; KEYS[2..]: (index, gen) per type
//	ARGV[1]: the version read ("0" when there was none)
//	ARGV[2]: the schedule JSON; ARGV[3]: the file's hash
//	returns: 0 kept, 1 stored, -1 the version moved (retry)
var seedScheduleScript = redis.NewScript(invalidateLua + `
if redis.call('HGET', KEYS[1], 'fileHash') == ARGV[3] then return 0 end
local v = redis.call('HGET', KEYS[1], 'version') or '0'
if v ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'version', tonumber(v) + 1, 'doc', ARGV[2], 'fileHash', ARGV[3])
invalidate(2)
return 1
`)

// Replies of the schedule scripts (updateScheduleScript answers
// scheduleMoved or a count; seedScheduleScript and restoreScheduleScript
// scheduleKept or scheduleStored, seed also scheduleMoved).
const (
	scheduleMoved  = -1 // the version moved since it was read: read again and retry
	scheduleKept   = 0
	scheduleStored = 1
)

// restoreScheduleScript stores the schedule file's content only where no
// schedule is stored (Redis lost it: a FLUSHDB, a failover to an empty
// replica), invalidating every type of it; a schedule stored meanwhile by
// another instance is kept. The schedule hash itself is the once-only
// guard, as SET NX would be: of every instance that found it missing,
// exactly one writes.
//
//	KEYS[1]: schedule hash; KEYS[2..]: (index, gen) per type
//	ARGV[1]: the schedule JSON; ARGV[2]: the file's hash
//	returns: 1 stored, 0 a schedule is stored (kept)
var restoreScheduleScript = redis.NewScript(invalidateLua + `
local v = redis.call('HGET', KEYS[1], 'version') or ''
local d = redis.call('HGET', KEYS[1], 'doc') or ''
if v ~= '' and d ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'version', (tonumber(v) or 0) + 1, 'doc', ARGV[1], 'fileHash', ARGV[2])
invalidate(2)
return 1
`)

// recordScript records a new appointment, prunes appointments that ended
// before the retention, and invalidates the appointment's type.
//
//	KEYS[1]: appointments hash; KEYS[2]: by-end zset; KEYS[3], KEYS[4]: (index, gen) of the type
//	ARGV[1]: appointment id; ARGV[2]: its JSON; ARGV[3]: its end (Unix ms);
//	ARGV[4]: prune ends before this (Unix ms); ARGV[5]: its start minus the buffer (Unix ms);
//	ARGV[6]: its end plus the buffer, UTC "2006-01-02T15:04:05" (compared with the
//	         first 19 characters of the others' slotStartDate: chronological in UTC)
//	returns: 1 recorded, 0 the same appointment was already recorded (the same
//	         id, type, specialist, client and slot: a retried /book, whatever
//	         its bookedAt), -1 another appointment has this id, -2 another
//	         appointment of the specialist (any type) overlaps it with the buffer
var recordScript = redis.NewScript(invalidateLua + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  if cur == ARGV[2] then return 0 end
  local ok, a = pcall(cjson.decode, cur)
  local b = cjson.decode(ARGV[2])
  if not ok or type(a) ~= 'table' then return -1 end
  for _, f in ipairs({'appointmentTypeId', 'specialistId', 'clientId', 'slotStartDate', 'slotEndDate'}) do
    if a[f] ~= b[f] then return -1 end
  end
  return 0
end
local new = cjson.decode(ARGV[2])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[5], '+inf')) do
  local ok, o = pcall(cjson.decode, redis.call('HGET', KEYS[1], id) or '')
  if ok and type(o) == 'table' and o.specialistId == new.specialistId
    and type(o.slotStartDate) == 'string' and string.sub(o.slotStartDate, 1, 19) < ARGV[6] then
    return -2
  end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4], 'LIMIT', 0, 100)
for _, id in ipairs(old) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
invalidate(3)
return 1
`)

// recordScript's replies.
const (
	recordOverlap = -2 // another appointment of the specialist overlaps it
	recordIDTaken = -1 // another appointment has this id
	recordSame    = 0  // the same appointment was recorded already
	recordStored  = 1
)

// replaceScript cancels (ARGV[3] empty) or reschedules (ARGV[3] the new
// JSON) an appointment if it is still what was read, and invalidates its
// type.
//
//	KEYS[1]: appointments hash; KEYS[2]: by-end zset; KEYS[3], KEYS[4]: (index, gen) of the type
//	ARGV[1]: appointment id; ARGV[2]: the JSON read; ARGV[3]: new JSON or ""; ARGV[4]: new end (Unix ms)
//	returns: 1 done, -1 it changed or vanished since it was read (read again)
var replaceScript = redis.NewScript(invalidateLua + `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return -1 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
invalidate(3)
return 1
`)

// replaceScript's replies.
const (
	replaceChanged = -1 // changed or vanished since it was read: read again
	replaceDone    = 1
)

// rangeScript reads the appointments that end after ARGV[1].
//
//	KEYS[1]: appointments hash; KEYS[2]: by-end zset
//	ARGV[1]: Unix ms (exclusive)
//	returns: the appointments' JSON
var rangeScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf')
if #ids == 0 then return {} end
local out = {}
for i = 1, #ids, 1000 do
  for _, v in ipairs(redis.call('HMGET', KEYS[1], unpack(ids, i, math.min(i + 999, #ids)))) do
    if v then out[#out + 1] = v end
  end
end
return out
`)

// fillScript caches dates of a type's computed timeslots unless an
// invalidation ran since the computation started, and indexes the key.
// The key's TTL is set when the key is created (a field added later lives
// no longer than the key), the index lives as long as its longest member.
//
//	KEYS[1]: cache key (hash: date → day); KEYS[2]: the type's index; KEYS[3]: its generation
//	ARGV[1]: the generation read before computing; ARGV[2]: TTL ms; ARGV[3..]: date, day pairs
//	returns: 1 cached, 0 refused (stale)
var fillScript = redis.NewScript(`
if (redis.call('GET', KEYS[3]) or '0') ~= ARGV[1] then return 0 end
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
local ttl = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('SADD', KEYS[2], KEYS[1])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`)

// fillScript's replies.
const (
	fillStale  = 0 // refused: an invalidation ran since the computation started
	fillCached = 1
)
