-- sweep: announces one hold whose time is up, if its key is gone.
--
--   KEYS[1] slot  KEYS[2] client (KEYS[3] again: in another shard)
--   KEYS[3] records  KEYS[4] expiry  KEYS[5] active
--   ARGV[1] holdId  ARGV[2] now ms  ARGV[3] channel
--   ARGV[4] "release" event JSON
--
-- Returns 1 expired and announced, 2 expired silently (a confirmed IVA
-- hold, a record already gone, or the slot key now a newer hold's: the
-- slot is not free), 0 still live (its index scores are moved to its real
-- end; a key in its last millisecond, PTTL 0, is live until it is gone).
local cur = redis.call('GET', KEYS[1])
local h = dec(cur)
if h and h.holdId == ARGV[1] then
  local p = redis.call('PTTL', KEYS[1])
  if p >= 0 then -- 0: its last millisecond, the key still there
    local exp = tonumber(ARGV[2]) + p
    redis.call('ZADD', KEYS[4], exp, ARGV[1])
    redis.call('ZADD', KEYS[5], exp, ARGV[1])
    return 0
  end
end
local r = dec(redis.call('HGET', KEYS[3], ARGV[1]))
if KEYS[2] ~= KEYS[3] then redis.call('ZREM', KEYS[2], ARGV[1]) end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if r and not r.confirmed and not cur then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
  return 1
end
return 2
