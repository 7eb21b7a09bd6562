-- clear_cooldown_value: deletes a cooldown while it is appointmentId's
-- (ClearCooldown where the index lives in another shard; split.go).
--
--   KEYS[1] cooldown key  ARGV[1] appointmentId
--
-- Returns clear_cooldown.lua's replies.
local v = dec(redis.call('GET', KEYS[1]))
if v and v.appointmentId == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
