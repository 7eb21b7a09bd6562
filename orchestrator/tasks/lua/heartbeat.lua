-- heartbeat: extends the claim of a PROCESSING task: heartbeat_at and
-- updated_at = now, and its entry in active (the index of both recovery
-- sweeps) moves to now, so neither takes a task whose worker is alive.
--
-- A task claimed before ARGV[6] (now - TASK_MAX_PROCESSING) is not
-- extended: its worker has had the longest processing time flowgate
-- allows, so a job that hangs while its heartbeat thread lives gives the
-- task back: the heartbeat monitor recovers it once its last extension is
-- stale, and counts the recovery.
--
-- KEYS[17] task key, KEYS[18] its history
-- ARGV[4] queue_id, ARGV[5] worker_id, ARGV[6] the oldest claimed_at
-- still extended (unix ms; absent or 0: no bound)
--
-- Returns the standard reply: 0 | 2 | 3 with reason 'not_processing',
-- 'wrong_worker' or 'max_processing'. No history event (heartbeats would
-- flood it).
local c = begin(KEYS, ARGV)
local id, worker = ARGV[4], ARGV[5]
local tk = KEYS[17]
local t = load(tk)
if not t then return reply(2) end
if t.status ~= 'PROCESSING' then return reply(3, t.status, 'not_processing', t) end
if t.worker_id ~= worker then return reply(3, t.status, 'wrong_worker', t) end
if tonumber(t.claimed_at or '0') < tonumber(ARGV[6] or '0') then return reply(3, t.status, 'max_processing', t) end
put(tk, t, {heartbeat_at = c.now, updated_at = c.now})
redis.call('ZADD', KEYS[ACTIVE], c.now, id)
-- The claimed index of a version before this one, while it still runs
-- beside this one (a rolling upgrade): its sweep must see the heartbeat.
redis.call('ZADD', KEYS[CLAIMED], 'XX', c.now, id)
return reply(0, '', '', t)
