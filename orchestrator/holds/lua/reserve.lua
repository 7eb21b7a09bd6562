-- reserve: a claim's first step in the client's shard (split.go): the
-- cooldown, the prune of expired entries, the exact quota and, when there
-- is room, the new hold id added with its expiry (a reservation of quota,
-- removed again when the claim in the resource shard refuses).
--
--   KEYS[1] client index  KEYS[2] cooldown (client_limit)
--   ARGV[1] holdId  ARGV[2] ttl ms  ARGV[3] now ms
--   ARGV[4] max holds (<= 0: no quota)  ARGV[5] "1": check the cooldown
--
-- Returns {code, value, ms} with claim.lua's codes: 1 reserved, -1 quota
-- reached (value the count, ms until the earliest entry ends), -2 cooldown
-- (ms its remaining TTL, -1 when it has none).
local ttl = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if ARGV[5] == '1' then
  local cd = redis.call('PTTL', KEYS[2])
  if cd > 0 or cd == -1 then return {-2, '', cd} end
end
local full = quotaFull(KEYS[1], tonumber(ARGV[4]), now)
if full then return full end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, '', ttl}
