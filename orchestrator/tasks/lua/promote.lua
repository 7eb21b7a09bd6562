-- promote: one batch of the SLA sweep (sweep.go): PENDING NORMAL/LOW tasks
-- created before the cutoff become HIGH. They keep their pending sequence,
-- so among HIGH tasks they are served in the order they became pending.
--
-- KEYS[17] sla key
-- ARGV[4] cutoff ms (exclusive), ARGV[5] batch size
--
-- Returns {scanned, {promoted ids}}.
local c = begin(KEYS, ARGV)
local ids = redis.call('ZRANGEBYSCORE', KEYS[SLA], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(c, ids)
if not ts then return redis.error_reply(errMoving) end
local out = {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status ~= 'PENDING' or t.priority == 'HIGH' then
    redis.call('ZREM', KEYS[SLA], id)
  else
    local from = t.priority
    apply(c, id, tkey(c, id), hkey(c, id), t, {priority = 'HIGH'}, 'sla',
      'SLA promotion ' .. from .. ' -> HIGH: pending longer than the SLA')
    out[#out + 1] = id
  end
end
return {#ids, out}
