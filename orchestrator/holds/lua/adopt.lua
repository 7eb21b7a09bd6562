-- adopt: hands a live web hold over to another owner on the same slot
-- (Adopt): the web hold's keys and indexes go without a "release", the new
-- hold takes the slot key, and the hand-over is recorded.
--
--   KEYS[1] slot  KEYS[2] new face key  KEYS[3] new client index
--   KEYS[4] records  KEYS[5] expiry  KEYS[6] new active
--   KEYS[7] web hold's face key  KEYS[8] web client's index
--   KEYS[9] web hold's active  KEYS[10] adoption record
--   (a client index in another shard: KEYS[3] or KEYS[8] is KEYS[4] again)
--   ARGV[1] new hold JSON  ARGV[2] face value  ARGV[3] new holdId
--   ARGV[4] new clientId  ARGV[5] new face  ARGV[6] ttl ms  ARGV[7] now ms
--   ARGV[8] channel  ARGV[9] "hold" event JSON  ARGV[10] record JSON
--   ARGV[11] "1": refresh an own hold  ARGV[12] appointmentTypeId
--   ARGV[13] web holdId  ARGV[14] web clientId  ARGV[15] the web face's
--   name  ARGV[16] adoption JSON  ARGV[17] its PX
--   ARGV[18] the web hold type's channel when it differs ("" = none)
--
-- Returns {code, value, ms}: 1 adopted, or claimed where the slot was free
-- (value ARGV[1]); 2 the new owner holds it already on its face (as
-- claim.lua's 2, TTLs raised with ARGV[11]); 0 anyone else's (value the
-- holder's JSON, ms its TTL; nothing changed).
local ttl = tonumber(ARGV[6])
local now = tonumber(ARGV[7])
local cur = redis.call('GET', KEYS[1])
if cur then
  local pttl = redis.call('PTTL', KEYS[1])
  local h = dec(cur)
  local own = ownHold(KEYS, h, pttl, ARGV[4], ARGV[5], ARGV[12], ARGV[11], ttl, now)
  if own then return {2, cur, own} end
  if not (h and h.holdId == ARGV[13] and h.clientId == ARGV[14] and h.face == ARGV[15] and not h.appointmentId) then
    return {0, cur, pttl}
  end
  redis.call('DEL', KEYS[7])
  if KEYS[8] ~= KEYS[4] then redis.call('ZREM', KEYS[8], ARGV[13]) end
  redis.call('ZREM', KEYS[5], ARGV[13])
  redis.call('ZREM', KEYS[9], ARGV[13])
  redis.call('HDEL', KEYS[4], ARGV[13])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
redis.call('HSET', KEYS[4], ARGV[3], ARGV[10])
index(ARGV[3], now + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('SET', KEYS[10], ARGV[16], 'PX', ARGV[17])
redis.call('PUBLISH', ARGV[8], ARGV[9])
if ARGV[18] ~= '' then redis.call('PUBLISH', ARGV[18], ARGV[9]) end
return {1, ARGV[1], ttl}
