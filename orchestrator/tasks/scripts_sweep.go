package tasks

// The scripts of the sweeps (sweep.go): each handles one batch of the tasks
// an index names past a cutoff. They use the prelude of scripts.go, read
// every task of the batch before writing (loadAll) and answer TRYAGAIN,
// writing nothing, when one is missing.

// recoverScript is one batch of a stale-claim sweep: PROCESSING tasks whose
// score in the index is older than the cutoff go back to PENDING (HIGH,
// recoveries+1, error_message = reason) or, when recoveries reaches the max
// recoveries, to the DLQ. attempts (FAILs) is left alone: a silent worker
// is not a failed attempt, and a healthy long task is never swept at all
// (its heartbeats move both indexes forward).
//
// KEYS[17] the index: active (last activity) or claimed (last heartbeat or
// claim)
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size, ARGV[6] reason,
// ARGV[7] DLQ message, ARGV[8] by, ARGV[9] max recoveries
//
// Returns {scanned, {recovered ids}, {dead-lettered ids}}. Entries of tasks
// no longer PROCESSING are dropped from the index, and an entry older than
// its task's last heartbeat (or claim) is moved to it, not recovered (both
// counted in scanned).
var recoverScript = script("recover", `
local idx, reason, by, maxrec = KEYS[17], ARGV[6], ARGV[8], tonumber(ARGV[9])
local ids = redis.call('ZRANGEBYSCORE', idx, '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(ids)
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
      apply(id, tkey(id), hkey(id), t, {status = 'ERROR', recoveries = n, dlq = '1', error_message = ARGV[7]}, by,
        why .. '; moved to the dead letter queue)')
      dead[#dead + 1] = id
    else
      local seq = redis.call('INCR', SEQ)
      apply(id, tkey(id), hkey(id), t, {status = 'PENDING', priority = 'HIGH', pseq = seq, recoveries = n,
        error_message = reason, worker_id = false, claimed_at = false, heartbeat_at = false}, by,
        why .. '; no attempt counted)')
      rec[#rec + 1] = id
    end
  end
end
return {#ids, rec, dead}
`)

// promoteScript is one batch of the SLA sweep: PENDING NORMAL/LOW tasks
// created before the cutoff become HIGH. They keep their pending sequence,
// so among HIGH tasks they are served in the order they became pending.
//
// KEYS[17] sla key
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size
//
// Returns {scanned, {promoted ids}}.
var promoteScript = script("promote", `
local ids = redis.call('ZRANGEBYSCORE', SLA, '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(ids)
if not ts then return redis.error_reply(errMoving) end
local out = {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status ~= 'PENDING' or t.priority == 'HIGH' then
    redis.call('ZREM', SLA, id)
  else
    local from = t.priority
    apply(id, tkey(id), hkey(id), t, {priority = 'HIGH'}, 'sla', 'SLA promotion ' .. from .. ' -> HIGH: pending longer than the SLA')
    out[#out + 1] = id
  end
end
return {#ids, out}
`)

// retryScript is one batch of the lost-retry sweep: ERROR tasks awaiting a
// retry (not dead letters) whose last update is older than the cutoff go
// back to PENDING with HIGH priority, as the Requeue their caller should
// have scheduled would have done. Attempts are unchanged (the FAIL counted).
//
// KEYS[17] retry key
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size, ARGV[6] reason
//
// Returns {scanned, {requeued ids}}.
var retryScript = script("retry", `
local ids = redis.call('ZRANGEBYSCORE', RETRY, '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(ids)
if not ts then return redis.error_reply(errMoving) end
local out = {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status ~= 'ERROR' or t.dlq == '1' then
    redis.call('ZREM', RETRY, id)
  else
    local seq = redis.call('INCR', SEQ)
    apply(id, tkey(id), hkey(id), t, {status = 'PENDING', priority = 'HIGH', pseq = seq,
      worker_id = false, claimed_at = false, heartbeat_at = false}, 'retry-sweep', ARGV[6])
    out[#out + 1] = id
  end
end
return {#ids, out}
`)

// purgeScript is one batch of the retention sweep: DONE tasks whose last
// update is older than the cutoff are deleted (hash and history) and removed
// from every index that holds them: all, status:DONE, done, their
// encounter's set, and the open hash if it still names them (it never
// should: a DONE task is closed).
//
// KEYS[17] done key
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size
//
// Returns {scanned, {purged ids}}. Entries of tasks that are not DONE are
// dropped from the index (counted in scanned).
var purgeScript = script("purge", `
local ids = redis.call('ZRANGEBYSCORE', DONE, '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local ts = loadAll(ids)
if not ts then return redis.error_reply(errMoving) end
for i, id in ipairs(ids) do
  local enc = ts[i].encounter_id or ''
  if ts[i].status == 'DONE' and enc ~= '' and not redis.call('ZSCORE', B .. 'enc:' .. enc, id) then
    return redis.error_reply(errMoving)
  end
end
local out = {}
for i, id in ipairs(ids) do
  local t = ts[i]
  if t.status ~= 'DONE' then
    redis.call('ZREM', DONE, id)
  else
    unindex(id, t)
    redis.call('ZREM', ALL, id)
    local enc = t.encounter_id or ''
    if enc ~= '' then
      redis.call('ZREM', B .. 'enc:' .. enc, id)
      if redis.call('HGET', OPEN, enc) == id then redis.call('HDEL', OPEN, enc) end
    end
    redis.call('DEL', tkey(id), hkey(id))
    out[#out + 1] = id
  end
end
return {#ids, out}
`)

// backfillDoneScript indexes, one batch per call, the DONE tasks that
// became DONE before the done index existed (an older flowgate), walking
// status:DONE in creation order from a cursor kept in KEYS[17]; when the
// walk reaches the end the cursor becomes "complete" and the script does
// nothing more. Tasks already in done keep their score.
//
// KEYS[17] done:backfill key
// ARGV[4] batch size
//
// Returns {scanned, indexed, backfillComplete or backfillPartial}.
var backfillDoneScript = script("backfillDone", `
local batch = tonumber(ARGV[4])
local cur = redis.call('GET', KEYS[17])
if cur == 'complete' then return {0, 0, 1} end
local from = '-inf'
if cur then from = '(' .. cur end
local rows = redis.call('ZRANGEBYSCORE', STATUS.DONE, from, '+inf', 'WITHSCORES', 'LIMIT', 0, batch)
local at = {}
for i = 1, #rows, 2 do
  at[i] = redis.call('HGET', tkey(rows[i]), 'updated_at')
  if not at[i] then return redis.error_reply(errMoving) end
end
local added = 0
for i = 1, #rows, 2 do
  added = added + redis.call('ZADD', DONE, 'NX', at[i], rows[i])
end
local n = #rows / 2
if n < batch then
  redis.call('SET', KEYS[17], 'complete')
  return {n, added, 1}
end
redis.call('SET', KEYS[17], rows[#rows])
return {n, added, 0}
`)

// backfillDoneScript's third reply: whether the walk is complete.
const (
	backfillPartial  = 0 // more batches to go
	backfillComplete = 1 // the walk reached the end
)
