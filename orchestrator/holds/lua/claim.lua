-- claim: takes a slot for a client: cooldown, owner, quota, claim, indexes
-- and event in one step.
--
--   KEYS[1] slot (canonical)  KEYS[2] face key   KEYS[3] client index
--   KEYS[4] records           KEYS[5] expiry     KEYS[6] active
--   KEYS[7] cooldown (client_limit)
--   (client in another shard: KEYS[3] and KEYS[7] are KEYS[4] again,
--   ARGV[8] 0 and ARGV[9] "0": reserve.lua checked them in the client's
--   shard)
--   ARGV[1] hold JSON (slot value)  ARGV[2] face value  ARGV[3] holdId
--   ARGV[4] clientId  ARGV[5] face  ARGV[6] ttl ms  ARGV[7] now ms
--   ARGV[8] max holds (<= 0: no quota)  ARGV[9] "1": check the cooldown
--   ARGV[10] channel  ARGV[11] "hold" event JSON  ARGV[12] record JSON
--   ARGV[13] "1": an own hold's TTLs are raised to ARGV[6] (IVA Reserve)
--   ARGV[14] appointmentTypeId
--
-- Returns {code, value, ms}:
--
--    1 claimed (value ARGV[1], ms the TTL)
--    2 this owner holds it already for this type (value its hold JSON, ms
--      its TTL: the shorter of the slot's and the face key's); a slot this
--      owner booked on the web face (its booked claim, with an
--      appointmentId) is taken (0), not held
--    0 taken by someone else (value the holder's JSON, ms its TTL)
--   -1 quota reached (value the count, ms until the client's earliest hold
--      ends)
--   -2 cooldown (ms its remaining TTL, -1 when it has none)
local ttl = tonumber(ARGV[6])
local now = tonumber(ARGV[7])
if ARGV[9] == '1' then
  local cd = redis.call('PTTL', KEYS[7])
  if cd > 0 or cd == -1 then return {-2, '', cd} end
end
local cur = redis.call('GET', KEYS[1])
if cur then
  local pttl = redis.call('PTTL', KEYS[1])
  local own = ownHold(KEYS, dec(cur), pttl, ARGV[4], ARGV[5], ARGV[14], ARGV[13], ttl, now)
  if own then return {2, cur, own} end
  return {0, cur, pttl}
end
local full = quotaFull(KEYS[3], tonumber(ARGV[8]), now)
if full then return full end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
redis.call('HSET', KEYS[4], ARGV[3], ARGV[12])
index(ARGV[3], now + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('PUBLISH', ARGV[10], ARGV[11])
return {1, ARGV[1], ttl}
