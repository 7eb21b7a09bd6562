package tasks

// The scripts of a claim's life: taking tasks, giving back a claim its
// client never received, and cancelling a claim answered as failed. They
// use the prelude of scripts.go.

// claimScript claims the next pending tasks: HIGH before NORMAL before LOW,
// FIFO (by pseq) within a priority. Each claim carries a token (made by the
// ledger, never by the client): the claimed ids are remembered under it, so
// a claim whose answer never reached its worker (Redis hung and the request
// gave up, though the script may still run later) can be taken back by
// cancelClaimScript. A token already cancelled claims nothing, so the
// cancel wins whichever of the two Redis runs first. The claim key is a
// string, the taken ids joined by ',' (queue ids are UUIDs), written with
// its TTL in one SET.
//
// KEYS[17] claim key <base>claim:<token>
// ARGV[4] worker_id, ARGV[5] limit, ARGV[6] token, ARGV[7] claim key TTL ms
//
// Returns {0, fields1, fields2, ...} (claimFields' order: CLAIMOUT), the
// claimed tasks in claim order, now PROCESSING with worker_id, claimed_at,
// heartbeat_at, updated_at (= now) and claim (the token) set; {0} when none
// was pending or the token was cancelled. The candidates are all read
// before the first is taken (see loadAll).
var claimScript = script("claim", `
local worker, limit, token, ttl = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local ck = KEYS[17]
if redis.call('EXISTS', ck) == 1 then return {0} end
local ids, from = {}, {}
for _, p in ipairs({'HIGH', 'NORMAL', 'LOW'}) do
  local want = limit - #ids
  if want <= 0 then break end
  for _, id in ipairs(redis.call('ZRANGE', PENDQ[p], 0, want - 1)) do
    ids[#ids + 1] = id
    from[#from + 1] = p
  end
end
RF = CLAIMREAD
local ts = loadAll(ids)
if not ts then return redis.error_reply(errMoving) end
local out, taken = {0}, {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status == 'PENDING' then
    apply(id, tkey(id), hkey(id), t, {status = 'PROCESSING', worker_id = worker, claimed_at = NOW, heartbeat_at = NOW,
      claim = token}, worker, 'claimed')
    taken[#taken + 1] = id
    out[#out + 1] = record(t, CLAIMOUT)
  else
    redis.call('ZREM', PENDQ[from[i]], id)
  end
end
if #taken > 0 then redis.call('SET', ck, table.concat(taken, ','), 'PX', ttl) end
return out
`)

// cancelClaimScript takes back every task of a claim whose worker was told
// it failed: each task still PROCESSING under that token goes back to
// PENDING in its old place, no attempt counted (as unclaimScript). A task
// that has moved on (ACKed, recovered and claimed again) is left alone. The
// claim key then holds only the tombstone "!", so a claim script with this
// token that Redis runs later claims nothing. A claim key of an earlier
// version (a set of ids) is read as well.
//
// KEYS[17] claim key <base>claim:<token>
// ARGV[4] token, ARGV[5] tombstone TTL ms
//
// Returns {released, kept}: tasks put back, and tasks left as they were.
var cancelClaimScript = script("cancelClaim", `
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
local ts = loadAll(ids)
if not ts then return redis.error_reply(errMoving) end
local released, kept = 0, 0
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status == 'PROCESSING' and t.claim == token then
    local worker = t.worker_id or ''
    apply(id, tkey(id), hkey(id), t, {status = 'PENDING', worker_id = false, claimed_at = false, heartbeat_at = false, claim = ''},
      worker, 'claim cancelled: its worker ' .. worker .. ' was answered that the claim failed (no attempt counted)')
    released = released + 1
  else
    kept = kept + 1
  end
end
redis.call('SET', ck, '!', 'PX', ttl)
return {released, kept}
`)

// unclaimScript gives back a claim that never reached its worker: the task,
// if still PROCESSING under that very claim (worker_id and claimed_at),
// goes back to PENDING in its old place (pseq is kept: the claim took it
// from the head of its queue), worker_id, claimed_at and heartbeat_at
// cleared, no attempt counted.
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] worker_id, ARGV[6] claimed_at ms
//
// Returns the standard reply: 0 | 1 'not_held' (no longer PROCESSING under
// that claim: recovered by a sweep, claimed again, acknowledged…) | 2.
var unclaimScript = script("unclaim", `
local id, worker, at = ARGV[4], ARGV[5], ARGV[6]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status ~= 'PROCESSING' or t.worker_id ~= worker or t.claimed_at ~= at then return reply(1, 'not_held', '', t) end
apply(id, tk, hk, t, {status = 'PENDING', worker_id = false, claimed_at = false, heartbeat_at = false}, worker,
  'claim released: never delivered to worker ' .. worker .. ' (no attempt counted)')
return reply(0, '', '', t)
`)
