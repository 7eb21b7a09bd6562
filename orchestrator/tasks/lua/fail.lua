-- fail: records a failed attempt: ERROR, attempts+1, error_message; at
-- max_attempts the task becomes a dead letter instead.
--
-- KEYS[17] task key, KEYS[18] its history, KEYS[19] (optional) the
-- request's replay key
-- ARGV[4] queue_id, ARGV[5] encounter_id (empty = unchecked), ARGV[6]
-- worker_id (empty = unchecked), ARGV[7] error_message, ARGV[8] DLQ message,
-- ARGV[9] the replay key's TTL in ms (with KEYS[19])
--
-- Returns the standard reply: 0 with a = 'retry' (attempts < max) or 'dlq'
-- (status ERROR, dlq = 1, error_message = DLQ message; the worker's message
-- is kept in history) | 1 'duplicate' with b = 'retry' or 'dlq' (the same
-- FAIL again: the task's last event is it) | 2 | 3 'not_processing' or
-- 'wrong_worker' | 4 'encounter_mismatch' | 5 'replayed' (KEYS[19] was set
-- already; nothing changed).
if seen(KEYS[19], ARGV[9]) then return reply(5, 'replayed') end
local c = begin(KEYS, ARGV)
local id, enc, worker, msg = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if enc ~= '' and t.encounter_id ~= enc then return reply(4, 'encounter_mismatch', '', t) end
if t.status ~= 'PROCESSING' then
  -- A FAIL sent again (the worker timed out waiting for the answer) finds
  -- its own FAIL as the task's last event: a duplicate, nothing changes.
  if t.status == 'ERROR' then
    local last = redis.call('LINDEX', hk, -1)
    if last then
      local ev = cjson.decode(last)
      if ev.from == 'PROCESSING' and ev.to == 'ERROR' and (worker == '' or ev.by == worker)
         and type(ev.reason) == 'string' and string.sub(ev.reason, 1, #msg) == msg then
        local kind = 'retry'
        if t.dlq == '1' then kind = 'dlq' end
        return reply(1, 'duplicate', kind, t)
      end
    end
  end
  return reply(3, t.status, 'not_processing', t)
end
if worker ~= '' and t.worker_id ~= worker then return reply(3, t.status, 'wrong_worker', t) end
local attempts = tonumber(t.attempts) + 1
local by = t.worker_id or (worker ~= '' and worker) or 'fail'
if attempts < tonumber(t.max_attempts) then
  apply(c, id, tk, hk, t, {status = 'ERROR', attempts = attempts, error_message = msg}, by, msg)
  return reply(0, 'retry', '', t)
end
apply(c, id, tk, hk, t, {status = 'ERROR', attempts = attempts, error_message = ARGV[8], dlq = '1'}, by,
  msg .. ' (attempt ' .. attempts .. ' of ' .. t.max_attempts .. '; moved to the dead letter queue)')
return reply(0, 'dlq', '', t)
