-- import: brings tasks of another queue (the old queue API) into the
-- ledger (import.go), each as it was there, deciding task by task; the
-- whole batch is one atomic script. A task is new (written with its status,
-- attempts, priority, payload, parsed_payload parts and error_message;
-- created_at as given, updated_at = now; indexed like any task of that
-- state; its source history, then an import event, in its history),
-- unchanged (its queue_id was imported before from the same content: the
-- stored import fingerprint matches) or a conflict, which writes nothing.
--
-- KEYS[17+4i..20+4i] task i's key, history key, encounter key (the task
-- key again when it has no encounter) and locator key (the task key again
-- with one shard: no check)
-- ARGV[4] '1' for a dry run (decide, write nothing), ARGV[5..] one task
-- each, a JSON object of strings: id, enc (empty = none), status,
-- priority, attempts, max_attempts, payload (JSON text, empty = null), fp
-- (payload fingerprint), pp (parsed_payload base object, empty = none),
-- actions and actions_fp (experityActions; actions_fp empty = none), dlq
-- ('0'/'1'), error_message (empty = none), created_at (ms), ifp (import
-- fingerprint), history (array of event JSON texts, oldest first), reason
-- (the import event's).
--
-- Returns {r1, ..., rn} in ARGV order, ri = {code, id, status, reason,
-- extra}: 0 imported (a dry run: would be), status as imported | 1
-- 'unchanged', status as stored | 3 conflict, status as stored (or as it
-- would be imported), reason 'different_content' (imported before from
-- other content), 'not_imported' (queue_id names a task that no import
-- wrote), 'encounter_open' (extra = the encounter's open task) or
-- 'located' (the queue_id has a locator in this shard: its task lives, or
-- is being created, in another shard; locator.go). Tasks of one batch see
-- the ones before them, but in a dry run, which writes nothing, they do
-- not (the caller keeps track).
local c = begin(KEYS, ARGV)
local dry = ARGV[4] == '1'
local out = {}
for i = 5, #ARGV do
  local x = cjson.decode(ARGV[i])
  local id, enc = x.id, x.enc
  local k = 17 + (i - 5) * 4
  local tk, hk, ek, lk = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local cur = redis.call('HMGET', tk, 'status', 'ifp')
  if not cur[1] and lk ~= tk and redis.call('EXISTS', lk) == 1 then
    out[#out + 1] = {3, id, x.status, 'located', ''}
  elseif cur[1] then
    if cur[2] == x.ifp then
      out[#out + 1] = {1, id, cur[1], 'unchanged', ''}
    elseif cur[2] then
      out[#out + 1] = {3, id, cur[1], 'different_content', ''}
    else
      out[#out + 1] = {3, id, cur[1], 'not_imported', ''}
    end
  else
    local open = isopen(x.status, x.dlq)
    local other = nil
    if open then other = openTask(c, enc) end
    if other then
      out[#out + 1] = {3, id, x.status, 'encounter_open', other}
    elseif dry then
      out[#out + 1] = {0, id, x.status, 'imported', ''}
    else
      local seq = redis.call('INCR', KEYS[SEQ])
      local t = {}
      local f = {queue_id = id, encounter_id = enc, status = x.status, priority = x.priority,
        attempts = x.attempts, max_attempts = x.max_attempts, recoveries = 0, fp = x.fp, dlq = x.dlq,
        created_at = x.created_at, updated_at = c.now, seq = seq, pseq = seq, ifp = x.ifp}
      if x.payload ~= '' then f.payload = x.payload end
      if x.pp ~= '' then f.pp = x.pp end
      if x.actions_fp ~= '' then f.actions, f.actions_fp = x.actions, x.actions_fp end
      if x.error_message ~= '' then f.error_message = x.error_message end
      put(tk, t, f)
      index(c, id, t)
      redis.call('ZADD', KEYS[ALL], seq, id)
      if enc ~= '' then
        redis.call('ZADD', ek, seq, id)
        if open then redis.call('HSET', KEYS[OPEN], enc, id) end
      end
      for _, e in ipairs(x.history) do redis.call('RPUSH', hk, e) end
      event(c, hk, '', x.status, 'import', x.reason)
      out[#out + 1] = {0, id, x.status, 'imported', ''}
    end
  end
end
return out
