-- confirm: turns a web hold into a booking: verify, end the hold and its
-- indexes, keep the canonical slot key as the booking's claim until the
-- slot ends (so the IVA face's Reserve refuses it and its Filter drops
-- it), publish "confirm", set the cooldown and its index by appointment
-- id.
--
--   KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
--   KEYS[5] expiry  KEYS[6] active  KEYS[7] cooldown  KEYS[8] cooldown index
--   (keys in other shards: KEYS[3], KEYS[7], KEYS[8] are KEYS[4] again and
--   ARGV[5] is 0; Confirm sets the cooldown itself, split.go)
--   ARGV[1] holdId  ARGV[2] clientId  ARGV[3] channel
--   ARGV[4] "confirm" event JSON  ARGV[5] cooldown ms (<= 0: none)
--   ARGV[6] cooldown value JSON  ARGV[7] booked claim JSON
--   ARGV[8] ms until the slot ends (<= 0: delete the key)
--
-- Returns 0 confirmed, 1 no such live hold, 2 another client's (nothing
-- changed).
local r = dec(redis.call('HGET', KEYS[4], ARGV[1]))
if not r then return 1 end
if r.hold.clientId ~= ARGV[2] then return 2 end
local h = dec(redis.call('GET', KEYS[1]))
if not h or h.holdId ~= ARGV[1] then return 1 end
local keep = tonumber(ARGV[8])
if keep > 0 then
  redis.call('SET', KEYS[1], ARGV[7], 'PX', keep)
  redis.call('DEL', KEYS[2])
else
  redis.call('DEL', KEYS[1], KEYS[2])
end
if KEYS[3] ~= KEYS[4] then redis.call('ZREM', KEYS[3], ARGV[1]) end
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
local cd = tonumber(ARGV[5])
if cd > 0 then
  redis.call('SET', KEYS[7], ARGV[6], 'PX', cd)
  redis.call('SET', KEYS[8], KEYS[7], 'PX', cd)
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 0
