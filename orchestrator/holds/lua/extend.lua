-- extend: moves a hold's quota entry to its new expiry (a heartbeat, a
-- refreshed or kept hold) in the client's shard (split.go): raised, never
-- lowered; ARGV[4] "1" also adds an entry that is missing.
--
--   KEYS[1] client index
--   ARGV[1] holdId  ARGV[2] expiry ms  ARGV[3] ttl ms (the index's PX
--   floor)  ARGV[4] add
--
-- Returns 1 moved or added, 0 nothing to move.
local exp = tonumber(ARGV[2])
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not cur and ARGV[4] ~= '1' then return 0 end
if not cur or tonumber(cur) < exp then redis.call('ZADD', KEYS[1], exp, ARGV[1]) end
local ttl = tonumber(ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
