-- recover: one batch of a stale-claim sweep (sweep.go): PROCESSING tasks
-- whose score in the index is older than the cutoff go back to PENDING
-- (HIGH, recoveries+1, error_message = reason) or, when recoveries reaches
-- the max recoveries, to the DLQ. attempts (FAILs) is left alone: a silent
-- worker is not a failed attempt, and a healthy long task is never swept at
-- all (its heartbeats move both indexes forward). Like every sweep, it
-- reads every task of the batch before writing (loadAll) and answers
-- TRYAGAIN, writing nothing, when one is missing.
--
-- KEYS[17] the index: active (last activity) or claimed (last heartbeat or
-- claim)
-- ARGV[4] cutoff ms (exclusive), ARGV[5] batch size, ARGV[6] reason,
-- ARGV[7] DLQ message, ARGV[8] by, ARGV[9] max recoveries
--
-- Returns {scanned, {recovered ids}, {dead-lettered ids}}. Entries of tasks
-- no longer PROCESSING are dropped from the index, and an entry older than
-- its task's last heartbeat (or claim) is moved to it, not recovered (both
-- counted in scanned).
local c = begin(KEYS, ARGV)
local idx, reason, by, maxrec = KEYS[17], ARGV[6], ARGV[8], tonumber(ARGV[9])
local ids = redis.call('ZRANGEBYSCORE', idx, '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(c, ids)
if not ts then return redis.error_reply(errMoving) end
local rec, dead = {}, {}
for i, id in ipairs(ids) do
  local t = ts[i]
  local last = tonumber(t.heartbeat_at or t.claimed_at or '0')
  if t.status ~= 'PROCESSING' then
    redis.call('ZREM', idx, id)
  elseif last >= tonumber(ARGV[4]) then
    -- The entry is behind its task: an earlier version's claimed index,
    -- whose entry outlived a recovery here and the claim that followed
    -- (this version does not write it). Moved to the task's last
    -- heartbeat; nothing is taken.
    redis.call('ZADD', idx, last, id)
  else
    local n = tonumber(t.recoveries or '0') + 1
    local why = reason
    if t.worker_id then why = why .. ' [worker ' .. t.worker_id .. ']' end
    why = why .. ' (recovery ' .. n .. ' of ' .. maxrec
    if n >= maxrec then
      apply(c, id, tkey(c, id), hkey(c, id), t, {status = 'ERROR', recoveries = n, dlq = '1', error_message = ARGV[7]},
        by, why .. '; moved to the dead letter queue)')
      dead[#dead + 1] = id
    else
      local seq = redis.call('INCR', KEYS[SEQ])
      apply(c, id, tkey(c, id), hkey(c, id), t, {status = 'PENDING', priority = 'HIGH', pseq = seq, recoveries = n,
        error_message = reason, worker_id = false, claimed_at = false, heartbeat_at = false}, by,
        why .. '; no attempt counted)')
      rec[#rec + 1] = id
    end
  end
end
return {#ids, rec, dead}
