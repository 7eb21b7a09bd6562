-- claim (locator.go): makes the locator of id point to the task's home
-- shard, before the create (or import) script writes the task there. The
-- locator is the key loc:<id> in the shard of a client-given queue_id whose
-- task lives in another shard; its value is "<home shard>:<written ms>".
-- The locator's scripts run alone, without the ledger's prelude.
--
-- KEYS[1] locator key <base>loc:<id>, in the shard of the id; KEYS[2] the
-- id's task key in that shard
-- ARGV[1] that shard's base, ARGV[2] id, ARGV[3] home shard index, ARGV[4]
-- now ms, ARGV[5] the value it may replace (empty = none: only a missing
-- locator, or one of the same home)
--
-- Returns {'here', status} when the id names a task of this shard (whose
-- home is this shard, so not ARGV[3]: a reused queue_id); {'other', value}
-- when the locator points to another home and is not ARGV[5] (nothing
-- changed); {'ok'} when it now points to ARGV[3], written at ARGV[4] (a
-- locator of the same home is refreshed: its time says a create is under
-- way).
local st = redis.call('HGET', KEYS[2], 'status')
if st then return {'here', st} end
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[5] and string.match(v, '^(%d+):') ~= ARGV[3] then return {'other', v} end
redis.call('SET', KEYS[1], ARGV[3] .. ':' .. ARGV[4])
return {'ok'}
