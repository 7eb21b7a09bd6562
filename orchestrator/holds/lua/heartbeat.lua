-- heartbeat: extends a live hold and its indexes together.
--
--   KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
--   KEYS[5] expiry  KEYS[6] active
--   ARGV[1] holdId  ARGV[2] clientId  ARGV[3] ttl ms  ARGV[4] now ms
--   ARGV[5] new hold JSON  ARGV[6] new face value ("" = keep the face's
--   value)  ARGV[7] new record JSON  ARGV[8] channel
--   ARGV[9] "heartbeat" event JSON
--
-- Returns 1 extended, 0 expired, unknown, not this client's or booked
-- (nothing changed). A booked web hold's slot key is its booked claim,
-- which embeds the hold: the record (deleted by the confirm) and the
-- claim's appointmentId tell it from a live hold, so a heartbeat that read
-- the record just before a confirm does not turn the booking back into a
-- 30 s hold.
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 0 then return 0 end
local h = dec(redis.call('GET', KEYS[1]))
if not h or h.holdId ~= ARGV[1] or h.clientId ~= ARGV[2] or h.appointmentId then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[1], ARGV[5], 'PX', ttl)
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[2], ARGV[6], 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[2], ttl)
end
redis.call('HSET', KEYS[4], ARGV[1], ARGV[7])
index(ARGV[1], tonumber(ARGV[4]) + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('PUBLISH', ARGV[8], ARGV[9])
return 1
