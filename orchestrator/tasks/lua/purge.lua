-- purge: one batch of the retention sweep (sweep.go): DONE tasks whose last
-- update is older than the cutoff are deleted (hash and history) and
-- removed from every index that holds them: all, status:DONE, done, their
-- encounter's set, and the open hash if it still names them (it never
-- should: a DONE task is closed).
--
-- KEYS[17] done key
-- ARGV[4] cutoff ms (exclusive), ARGV[5] batch size
--
-- Returns {scanned, {purged ids}}. Entries of tasks that are not DONE are
-- dropped from the index (counted in scanned).
local c = begin(KEYS, ARGV)
local ids = redis.call('ZRANGEBYSCORE', KEYS[DONE], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(c, ids)
if not ts then return redis.error_reply(errMoving) end
for i, id in ipairs(ids) do
  local enc = ts[i].encounter_id or ''
  if ts[i].status == 'DONE' and enc ~= '' and not redis.call('ZSCORE', c.base .. 'enc:' .. enc, id) then
    return redis.error_reply(errMoving)
  end
end
local out = {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status ~= 'DONE' then
    redis.call('ZREM', KEYS[DONE], id)
  else
    unindex(c, id, t)
    redis.call('ZREM', KEYS[ALL], id)
    local enc = t.encounter_id or ''
    if enc ~= '' then
      redis.call('ZREM', c.base .. 'enc:' .. enc, id)
      if redis.call('HGET', KEYS[OPEN], enc) == id then redis.call('HDEL', KEYS[OPEN], enc) end
    end
    redis.call('DEL', tkey(c, id), hkey(c, id))
    out[#out + 1] = id
  end
end
return {#ids, out}
