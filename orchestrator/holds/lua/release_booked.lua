-- release_booked: frees a slot a web booking kept (the appointment was
-- cancelled): only while the slot key is still that booking's claim. The
-- "release" event is the claim's own hold (bookedClaim less its
-- appointmentId, plus "type"): its id (the stream shows its Ref), client,
-- face, slot times and holdExpiresAt as the confirm stored them, as every
-- other release event carries the hold's record. The caller knows only the
-- slot (a cancel reads the appointment, not the hold), so the event is
-- built here, from the value the script deletes.
--
--   KEYS[1] slot
--   ARGV[1] appointmentId  ARGV[2] channel
--
-- Returns 1 released (event published), 0 not this booking's claim
-- (nothing changed).
local h = dec(redis.call('GET', KEYS[1]))
if not h or h.appointmentId ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
h.appointmentId = nil
h.type = 'release'
redis.call('PUBLISH', ARGV[2], cjson.encode(h))
return 1
