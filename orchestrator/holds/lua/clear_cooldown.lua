-- clear_cooldown: deletes a cooldown found through its appointment index.
--
--   KEYS[1] cooldown index  KEYS[2] cooldown key (the index's value)
--   ARGV[1] appointmentId
--
-- Returns 1 cleared, 0 none (or the key now belongs to another
-- appointment: only the index is deleted).
if redis.call('GET', KEYS[1]) ~= KEYS[2] then return 0 end
redis.call('DEL', KEYS[1])
local v = dec(redis.call('GET', KEYS[2]))
if v and v.appointmentId == ARGV[1] then
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
