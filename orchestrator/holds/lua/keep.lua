-- keep: the IVA face's Confirm: the booked slot stays held for ARGV[5] ms
-- so it is not re-offered; the hold is marked confirmed (its expiry is then
-- silent) and "confirm" is published.
--
--   KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
--   KEYS[5] expiry  KEYS[6] active
--   ARGV[1] expected holdId ("" = the slot was free)  ARGV[2] clientId
--   ARGV[3] face  ARGV[4] now ms  ARGV[5] ttl ms  ARGV[6] channel
--   ARGV[7] hold JSON  ARGV[8] face value  ARGV[9] record JSON
--   ARGV[10] "confirm" event JSON
--   (7-10 describe the expected hold, or a new one under a new id when
--   ARGV[1] is "")
--   ARGV[11] the new hold's id
--
-- Returns {code, value, ms}: 1 kept (own hold extended), 2 retaken (was
-- free), 3 changed since read (retry), 0 another owner's (value its JSON,
-- ms its TTL).
local ttl = tonumber(ARGV[5])
local exp = tonumber(ARGV[4]) + ttl
local cur = redis.call('GET', KEYS[1])
local h = dec(cur)
if cur and not (h and h.clientId == ARGV[2] and h.face == ARGV[3]) then
  return {0, cur, redis.call('PTTL', KEYS[1])}
end
if (h and h.holdId or '') ~= ARGV[1] then return {3, '', 0} end
local id = ARGV[1]
local code = 1
if id == '' then id = ARGV[11]; code = 2 end
redis.call('SET', KEYS[1], ARGV[7], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[8], 'PX', ttl)
redis.call('HSET', KEYS[4], id, ARGV[9])
index(id, exp, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('PUBLISH', ARGV[6], ARGV[10])
return {code, ARGV[7], ttl}
