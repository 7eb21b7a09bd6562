-- retry: one batch of the lost-retry sweep (sweep.go): ERROR tasks awaiting
-- a retry (not dead letters) whose last update is older than the cutoff go
-- back to PENDING with HIGH priority, as the Requeue their caller should
-- have scheduled would have done. Attempts are unchanged (the FAIL
-- counted).
--
-- KEYS[17] retry key
-- ARGV[4] cutoff ms (exclusive), ARGV[5] batch size, ARGV[6] reason
--
-- Returns {scanned, {requeued ids}}.
local c = begin(KEYS, ARGV)
local ids = redis.call('ZRANGEBYSCORE', KEYS[RETRY], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(c, ids)
if not ts then return redis.error_reply(errMoving) end
local out = {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status ~= 'ERROR' or t.dlq == '1' then
    redis.call('ZREM', KEYS[RETRY], id)
  else
    local seq = redis.call('INCR', KEYS[SEQ])
    apply(c, id, tkey(c, id), hkey(c, id), t, {status = 'PENDING', priority = 'HIGH', pseq = seq,
      worker_id = false, claimed_at = false, heartbeat_at = false}, 'retry-sweep', ARGV[6])
    out[#out + 1] = id
  end
end
return {#ids, out}
