-- release: ends a hold (Release, ReleaseSlot).
--
--   KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
--   KEYS[5] expiry  KEYS[6] active
--   ARGV[1] holdId  ARGV[2] clientId ("" = whoever holds it)
--   ARGV[3] channel  ARGV[4] "release" event JSON
--
-- Returns 1 released (event published), 0 unknown or already gone,
-- -1 another client's (nothing changed). The face key is deleted only
-- while the slot key still names this hold: after expiry it may already
-- be a newer hold's; then the indexes are cleaned without a "release"
-- (the slot is not free) and 0 is returned.
local r = dec(redis.call('HGET', KEYS[4], ARGV[1]))
if not r then return 0 end
if ARGV[2] ~= '' and r.hold.clientId ~= ARGV[2] then return -1 end
local cur = redis.call('GET', KEYS[1])
local h = dec(cur)
local mine = h and h.holdId == ARGV[1]
if mine then
  redis.call('DEL', KEYS[1], KEYS[2])
end
if KEYS[3] ~= KEYS[4] then redis.call('ZREM', KEYS[3], ARGV[1]) end
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if cur and not mine then return 0 end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
