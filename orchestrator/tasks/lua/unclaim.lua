-- unclaim: gives back a claim that never reached its worker: the task, if
-- still PROCESSING under that very claim (worker_id and claimed_at), goes
-- back to PENDING in its old place (pseq is kept: the claim took it from
-- the head of its queue), worker_id, claimed_at and heartbeat_at cleared,
-- no attempt counted.
--
-- KEYS[17] task key, KEYS[18] its history
-- ARGV[4] queue_id, ARGV[5] worker_id, ARGV[6] claimed_at ms
--
-- Returns the standard reply: 0 | 1 'not_held' (no longer PROCESSING under
-- that claim: recovered by a sweep, claimed again, acknowledged...) | 2.
local c = begin(KEYS, ARGV)
local id, worker, at = ARGV[4], ARGV[5], ARGV[6]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status ~= 'PROCESSING' or t.worker_id ~= worker or t.claimed_at ~= at then
  return reply(1, 'not_held', '', t)
end
apply(c, id, tk, hk, t, {status = 'PENDING', worker_id = false, claimed_at = false, heartbeat_at = false}, worker,
  'claim released: never delivered to worker ' .. worker .. ' (no attempt counted)')
return reply(0, '', '', t)
