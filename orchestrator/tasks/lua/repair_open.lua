-- repair_open: clears the open entry of encounter enc when it still names
-- task other and other is closed or gone: an entry no transition leaves
-- behind, cleared when the ledger meets it.
--
-- KEYS[17] other's task key
-- ARGV[4] encounter_id, ARGV[5] other's id
--
-- Returns 1 when the entry was cleared, else 0.
if redis.call('HGET', KEYS[OPEN], ARGV[4]) ~= ARGV[5] then return 0 end
local st = redis.call('HMGET', KEYS[17], 'status', 'dlq')
if st[1] and isopen(st[1], st[2]) then return 0 end
redis.call('HDEL', KEYS[OPEN], ARGV[4])
return 1
