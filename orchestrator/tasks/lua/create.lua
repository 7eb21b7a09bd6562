-- create: creates up to MaxBatchCreate tasks, all or nothing.
--
-- KEYS[17+4i..20+4i] item i's task key, history key, encounter key (the
-- task key again when it has no encounter) and locator key (the task key
-- again with one shard: no check)
-- ARGV[4] n, then n groups of 6: queue_id, encounter_id (empty = none),
-- priority, max_attempts, payload JSON (empty = null), payload fingerprint.
--
-- Returns {3, status, 'queue_id_reused', {}, queue_id} and writes nothing
-- when a given queue_id names a stored task with another encounter_id or
-- payload; {3, <empty>, 'located', {}, queue_id} and writes nothing when a
-- queue_id has a locator in this shard (its task lives, or is being
-- created, in another shard: locator.go). Otherwise {0, r1, ..., rn} in
-- request order, ri = {0, id} when created, {1, id, fields} when a task
-- with that queue_id answers, or {2, other} when the open task other of
-- the same encounter answers (its keys are not declared: the ledger reads
-- it).
local c = begin(KEYS, ARGV)
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local o = 5 + i * 6
  local cur = redis.call('HMGET', KEYS[17 + i * 4], 'status', 'encounter_id', 'fp')
  if cur[1] and (cur[2] ~= ARGV[o + 1] or cur[3] ~= ARGV[o + 5]) then
    return {3, cur[1], 'queue_id_reused', {}, ARGV[o]}
  end
  local lk = KEYS[20 + i * 4]
  if not cur[1] and lk ~= KEYS[17 + i * 4] and redis.call('EXISTS', lk) == 1 then
    return {3, '', 'located', {}, ARGV[o]}
  end
end
local out = {0}
for i = 0, n - 1 do
  local o = 5 + i * 6
  local id, enc = ARGV[o], ARGV[o + 1]
  local tk, hk, ek = KEYS[17 + i * 4], KEYS[18 + i * 4], KEYS[19 + i * 4]
  local other = nil
  local exists = redis.call('EXISTS', tk) == 1
  if not exists then other = openTask(c, enc) end
  if exists then
    out[#out + 1] = {1, id, record(load(tk))}
  elseif other then
    out[#out + 1] = {2, other}
  else
    local seq = redis.call('INCR', KEYS[SEQ])
    local t = {}
    local f = {queue_id = id, encounter_id = enc, status = 'PENDING', priority = ARGV[o + 2],
      attempts = 0, max_attempts = ARGV[o + 3], recoveries = 0, fp = ARGV[o + 5], dlq = '0',
      created_at = c.now, updated_at = c.now, seq = seq, pseq = seq}
    if ARGV[o + 4] ~= '' then f.payload = ARGV[o + 4] end
    put(tk, t, f)
    index(c, id, t)
    redis.call('ZADD', KEYS[ALL], seq, id)
    if enc ~= '' then
      redis.call('ZADD', ek, seq, id)
      redis.call('HSET', KEYS[OPEN], enc, id)
    end
    event(c, hk, '', 'PENDING', 'create', 'created')
    out[#out + 1] = {0, id}
  end
end
return out
