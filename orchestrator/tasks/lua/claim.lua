-- claim: claims the next pending tasks: HIGH before NORMAL before LOW,
-- FIFO (by pseq) within a priority. Each claim carries a token (made by the
-- ledger, never by the client): the claimed ids are remembered under it, so
-- a claim whose answer never reached its worker (Redis hung and the request
-- gave up, though the script may still run later) can be taken back by
-- cancel_claim.lua. A token already cancelled claims nothing, so the cancel
-- wins whichever of the two Redis runs first. The claim key is a string,
-- the taken ids joined by ',' (queue ids are UUIDs), written with its TTL
-- in one SET.
--
-- KEYS[17] claim key <base>claim:<token>
-- ARGV[4] worker_id, ARGV[5] limit, ARGV[6] token, ARGV[7] claim key TTL ms
--
-- Returns {0, fields1, fields2, ...} (claimFields' order: CLAIMOUT), the
-- claimed tasks in claim order, now PROCESSING with worker_id, claimed_at,
-- heartbeat_at, updated_at (= now) and claim (the token) set; {0} when none
-- was pending or the token was cancelled. The candidates are all read
-- before the first is taken (see loadAll).
local c = begin(KEYS, ARGV)
local worker, limit, token, ttl = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local ck = KEYS[17]
if redis.call('EXISTS', ck) == 1 then return {0} end
local ids, from = {}, {}
for _, p in ipairs({'HIGH', 'NORMAL', 'LOW'}) do
  local want = limit - #ids
  if want <= 0 then break end
  for _, id in ipairs(redis.call('ZRANGE', KEYS[PENDQ[p]], 0, want - 1)) do
    ids[#ids + 1] = id
    from[#from + 1] = p
  end
end
local ts = loadAll(c, ids, CLAIMREAD)
if not ts then return redis.error_reply(errMoving) end
local out, taken = {0}, {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status == 'PENDING' then
    apply(c, id, tkey(c, id), hkey(c, id), t, {status = 'PROCESSING', worker_id = worker, claimed_at = c.now,
      heartbeat_at = c.now, claim = token}, worker, 'claimed')
    taken[#taken + 1] = id
    out[#out + 1] = record(t, CLAIMOUT)
  else
    redis.call('ZREM', KEYS[PENDQ[from[i]]], id)
  end
end
if #taken > 0 then redis.call('SET', ck, table.concat(taken, ','), 'PX', ttl) end
return out
