-- replay: brings a dead letter back to PENDING with attempts and
-- recoveries reset.
--
-- KEYS[17] task key, KEYS[18] its history
-- ARGV[4] queue_id, ARGV[5] priority
--
-- Returns the standard reply: 0 | 2 | 3 'not_dlq' or 'encounter_open'
-- (another task of the encounter was created meanwhile; extra = its id).
local c = begin(KEYS, ARGV)
local id, prio = ARGV[4], ARGV[5]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status ~= 'ERROR' or t.dlq ~= '1' then return reply(3, t.status, 'not_dlq', t) end
local seq = redis.call('INCR', KEYS[SEQ])
local other = apply(c, id, tk, hk, t, {status = 'PENDING', priority = prio, pseq = seq, attempts = 0, recoveries = 0,
  dlq = '0', worker_id = false, claimed_at = false, heartbeat_at = false}, 'replay',
  'replayed from the dead letter queue with priority ' .. prio)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
