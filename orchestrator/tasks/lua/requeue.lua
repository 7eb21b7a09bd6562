-- requeue: brings an ERROR task (not a dead letter) back to PENDING; with
-- ARGV[6], only while it has exactly that many attempts, i.e. while it
-- still awaits the retry of the FAIL that scheduled this requeue.
--
-- KEYS[17] task key, KEYS[18] its history
-- ARGV[4] queue_id, ARGV[5] priority, ARGV[6] expected attempts (empty: any)
--
-- Returns the standard reply: 0 | 1 'already_pending' or
-- 'already_processing' (a replayed requeue) or 'attempts_changed' (b = the
-- task's attempts: a later FAIL awaits its own requeue) | 2 | 3 'done' or
-- 'dlq'.
local c = begin(KEYS, ARGV)
local id, prio, want = ARGV[4], ARGV[5], ARGV[6] or ''
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status == 'PENDING' or t.status == 'PROCESSING' then
  return reply(1, 'already_' .. string.lower(t.status), '', t)
end
if t.status == 'DONE' then return reply(3, t.status, 'done', t) end
if t.dlq == '1' then return reply(3, t.status, 'dlq', t) end
if want ~= '' and tonumber(t.attempts) ~= tonumber(want) then return reply(1, 'attempts_changed', t.attempts, t) end
local seq = redis.call('INCR', KEYS[SEQ])
local other = apply(c, id, tk, hk, t, {status = 'PENDING', priority = prio, pseq = seq,
  worker_id = false, claimed_at = false, heartbeat_at = false}, 'requeue', 'requeued with priority ' .. prio)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
