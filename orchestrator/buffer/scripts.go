package buffer

import "github.com/redis/go-redis/v9"

// admitScript is an enqueue's admission, one step: the idempotency claim
// and the capacity reservation (seed ENQUEUE "check idempotency", "check
// backpressure").
//
//	KEYS[1] depth counter; KEYS[2] idem key (absent without a key)
//	ARGV[1] n messages; ARGV[2] max queue size; ARGV[3] claim value;
//	ARGV[4] the claim being taken over ("" : the key must be free)
//	returns {0, depth after} admitted | {1, depth} full |
//	        {2, claim} the key is claimed by another message
var admitScript = redis.NewScript(`
if KEYS[2] then
  local v = redis.call('GET', KEYS[2])
  if v and v ~= ARGV[4] then return {2, v} end
end
local n = tonumber(ARGV[1])
local d = tonumber(redis.call('GET', KEYS[1]) or '0')
if d + n > tonumber(ARGV[2]) then return {1, d} end
d = redis.call('INCRBY', KEYS[1], n)
if KEYS[2] then redis.call('SET', KEYS[2], ARGV[3]) end
return {0, d}
`)

// unadmitScript undoes an admission whose enqueue certainly failed.
//
//	KEYS[1] depth counter; KEYS[2] idem key (absent without a key)
//	ARGV[1] n messages; ARGV[2] the claim value to drop
//	returns the depth after
var unadmitScript = redis.NewScript(`
if KEYS[2] and redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
local d = redis.call('DECRBY', KEYS[1], ARGV[1])
if d < 0 then redis.call('SET', KEYS[1], 0); d = 0 end
return d
`)

// leaveScript counts messages that left the queues (completed or dead)
// and reports the depth.
//
//	KEYS[1] depth counter; ARGV[1] n
//	returns the depth after (never below 0)
var leaveScript = redis.NewScript(`
local d = redis.call('DECRBY', KEYS[1], ARGV[1])
if d < 0 then redis.call('SET', KEYS[1], 0); d = 0 end
return d
`)

// expireIdemScript gives an idempotency claim its retention once the
// message finished, or deletes it (ttl 0), only while it still names the
// message (a later claimant is never touched).
//
//	KEYS[1] idem key; ARGV[1] "<messageId> " (the claim's start);
//	ARGV[2] TTL ms (0: delete)
//	returns 1 when changed, else 0
var expireIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then return redis.call('DEL', KEYS[1]) end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`)

// dlqCountScript moves the dead-letter counter and decides the alert in
// the same step, so two instances never both see "first crossing" and a
// stale reading never re-arms it (seed checkAndAlert).
//
//	KEYS[1] DLQ counter; KEYS[2] alert flag
//	ARGV[1] delta, or the true count when ARGV[3] == "set"; ARGV[2] threshold
//	returns {1, count} on a crossing (alert now) | {0, count}
var dlqCountScript = redis.NewScript(`
local n
if ARGV[3] == 'set' then
  n = tonumber(ARGV[1]); redis.call('SET', KEYS[1], n)
else
  n = redis.call('INCRBY', KEYS[1], ARGV[1])
end
if n < 0 then n = 0; redis.call('SET', KEYS[1], 0) end
if n >= tonumber(ARGV[2]) then
  if redis.call('SET', KEYS[2], n, 'NX') then return {1, n} end
  return {0, n}
end
redis.call('DEL', KEYS[2])
return {0, n}
`)
