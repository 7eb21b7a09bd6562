-- dlq: moves a task to the dead letter queue by hand (manual review).
--
-- KEYS[17] task key, KEYS[18] its history
-- ARGV[4] queue_id, ARGV[5] error_message, ARGV[6] reason
--
-- Returns the standard reply: 0 | 1 'already_dlq' | 2 | 3 'done'.
local c = begin(KEYS, ARGV)
local id = ARGV[4]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status == 'DONE' then return reply(3, t.status, 'done', t) end
if t.dlq == '1' then return reply(1, 'already_dlq', '', t) end
apply(c, id, tk, hk, t, {status = 'ERROR', dlq = '1', error_message = ARGV[5]}, 'api', ARGV[6])
return reply(0, '', '', t)
