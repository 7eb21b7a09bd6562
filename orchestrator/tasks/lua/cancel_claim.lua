-- cancel_claim: takes back every task of a claim whose worker was told it
-- failed: each task still PROCESSING under that token goes back to PENDING
-- in its old place, no attempt counted (as unclaim.lua). A task that has
-- moved on (ACKed, recovered and claimed again) is left alone. The claim
-- key then holds only the tombstone "!", so a claim script with this token
-- that Redis runs later claims nothing. A claim key of an earlier version
-- (a set of ids) is read as well.
--
-- KEYS[17] claim key <base>claim:<token>
-- ARGV[4] token, ARGV[5] tombstone TTL ms
--
-- Returns {released, kept}: tasks put back, and tasks left as they were.
local c = begin(KEYS, ARGV)
local token, ttl = ARGV[4], ARGV[5]
local ck = KEYS[17]
local ids = {}
local kind = redis.call('TYPE', ck)
kind = kind.ok or kind
if kind == 'string' then
  for id in string.gmatch(redis.call('GET', ck), '[^,!]+') do ids[#ids + 1] = id end
elseif kind == 'set' then -- an earlier version's claim: a set of ids, or the tombstone '!'
  for _, id in ipairs(redis.call('SMEMBERS', ck)) do
    if id ~= '!' then ids[#ids + 1] = id end
  end
end
local ts = loadAll(c, ids)
if not ts then return redis.error_reply(errMoving) end
local released, kept = 0, 0
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status == 'PROCESSING' and t.claim == token then
    local worker = t.worker_id or ''
    apply(c, id, tkey(c, id), hkey(c, id), t,
      {status = 'PENDING', worker_id = false, claimed_at = false, heartbeat_at = false, claim = ''}, worker,
      'claim cancelled: its worker ' .. worker .. ' was answered that the claim failed (no attempt counted)')
    released = released + 1
  else
    kept = kept + 1
  end
end
redis.call('SET', ck, '!', 'PX', ttl)
return {released, kept}
