-- backfill_done: indexes, one batch per call, the DONE tasks that became
-- DONE before the done index existed (an older flowgate), walking
-- status:DONE in creation order from a cursor kept in KEYS[17]; when the
-- walk reaches the end the cursor becomes "complete" and the script does
-- nothing more. Tasks already in done keep their score.
--
-- KEYS[17] done:backfill key
-- ARGV[4] batch size
--
-- Returns {scanned, indexed, complete}: complete is 1 when the walk reached
-- the end (backfillComplete), else 0 (backfillPartial).
local c = begin(KEYS, ARGV)
local batch = tonumber(ARGV[4])
local cur = redis.call('GET', KEYS[17])
if cur == 'complete' then return {0, 0, 1} end
local from = '-inf'
if cur then from = '(' .. cur end
local rows = redis.call('ZRANGEBYSCORE', KEYS[STATUS.DONE], from, '+inf', 'WITHSCORES', 'LIMIT', 0, batch)
local at = {}
for i = 1, #rows, 2 do
  at[i] = redis.call('HGET', tkey(c, rows[i]), 'updated_at')
  if not at[i] then return redis.error_reply(errMoving) end
end
local added = 0
for i = 1, #rows, 2 do
  added = added + redis.call('ZADD', KEYS[DONE], 'NX', at[i], rows[i])
end
local n = #rows / 2
if n < batch then
  redis.call('SET', KEYS[17], 'complete')
  return {n, added, 1}
end
redis.call('SET', KEYS[17], rows[#rows])
return {n, added, 0}
