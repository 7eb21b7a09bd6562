package tasks

import "github.com/redis/go-redis/v9"

// Every transition of the ledger is one of the Lua scripts below, so it is
// atomic across any number of flowgate instances. Each script starts with
// the prelude, whose ARGV are common to all:
//
//	ARGV[1] key base "<prefix>:<shard tag>:"   ARGV[2] now, Unix ms   ARGV[3] history cap
//
// Script-specific ARGV start at 4. Scripts never call TIME: the caller's
// clock decides, which keeps tests deterministic.
//
// Single-task scripts answer the standard reply
//
//	{code, a, b, fields, extra}
//
// code: 0 done, 1 no-op (nothing changed; a says why), 2 not found,
// 3 conflict (a = current status, b = reason), 4 invalid (a = reason);
// fields is the task's HGETALL after the script ({} when not found), extra
// the id of the encounter's other open task for reason "encounter_open".
// parseReply and (*Ledger).check turn it into a task or a typed error.

const prelude = `
local B = ARGV[1]
local NOW = ARGV[2]
local HCAP = tonumber(ARGV[3])

local function tkey(id) return B .. 't:' .. id end

local function load(id)
  local raw = redis.call('HGETALL', tkey(id))
  if #raw == 0 then return nil end
  local t = {}
  for i = 1, #raw, 2 do t[raw[i]] = raw[i + 1] end
  return t
end

local function flat(t)
  local out = {}
  for k, v in pairs(t) do
    out[#out + 1] = k
    out[#out + 1] = v
  end
  return out
end

local function reply(code, a, b, t, extra)
  local f = {}
  if t then f = flat(t) end
  return {code, a or '', b or '', f, extra or ''}
end

-- put writes the fields f (a value of false deletes the field) to the task
-- hash and mirrors them into t.
local function put(id, t, f)
  local hs, hd = {}, {}
  for k, v in pairs(f) do
    if v == false then
      hd[#hd + 1] = k
      t[k] = nil
    else
      v = tostring(v)
      hs[#hs + 1] = k
      hs[#hs + 1] = v
      t[k] = v
    end
  end
  if #hs > 0 then redis.call('HSET', tkey(id), unpack(hs)) end
  if #hd > 0 then redis.call('HDEL', tkey(id), unpack(hd)) end
end

local function event(id, from, to, by, reason)
  local h = B .. 'h:' .. id
  redis.call('RPUSH', h, cjson.encode({at = NOW, from = from, to = to, by = by, reason = reason}))
  redis.call('LTRIM', h, -HCAP, -1)
end

-- A task is open (blocks a second task for its encounter) while PENDING,
-- PROCESSING or ERROR awaiting a retry; DONE and dead letters are closed.
local function isopen(status, dlq)
  return status == 'PENDING' or status == 'PROCESSING' or (status == 'ERROR' and dlq ~= '1')
end

local function unindex(id, t)
  redis.call('ZREM', B .. 'status:' .. t.status, id)
  if t.status == 'PENDING' then
    redis.call('ZREM', B .. 'pending:' .. t.priority, id)
    redis.call('ZREM', B .. 'sla', id)
  elseif t.status == 'PROCESSING' then
    redis.call('ZREM', B .. 'active', id)
    redis.call('ZREM', B .. 'claimed', id)
  elseif t.status == 'ERROR' and t.dlq ~= '1' then
    redis.call('ZREM', B .. 'retry', id)
  elseif t.status == 'DONE' then
    redis.call('ZREM', B .. 'done', id)
  end
  if t.dlq == '1' then redis.call('ZREM', B .. 'dlq', id) end
end

local function index(id, t)
  redis.call('ZADD', B .. 'status:' .. t.status, t.seq, id)
  if t.status == 'PENDING' then
    redis.call('ZADD', B .. 'pending:' .. t.priority, t.pseq, id)
    if t.priority ~= 'HIGH' then redis.call('ZADD', B .. 'sla', t.created_at, id) end
  elseif t.status == 'PROCESSING' then
    redis.call('ZADD', B .. 'active', t.updated_at, id)
    redis.call('ZADD', B .. 'claimed', t.heartbeat_at or t.claimed_at, id)
  elseif t.status == 'ERROR' and t.dlq ~= '1' then
    redis.call('ZADD', B .. 'retry', t.updated_at, id)
  elseif t.status == 'DONE' then
    redis.call('ZADD', B .. 'done', t.updated_at, id)
  end
  if t.dlq == '1' then redis.call('ZADD', B .. 'dlq', t.seq, id) end
end

-- openTask returns the id of the open task of encounter enc, if any.
local function openTask(enc)
  if enc == nil or enc == '' then return nil end
  local other = redis.call('HGET', B .. 'open', enc)
  if not other then return nil end
  local st = redis.call('HMGET', tkey(other), 'status', 'dlq')
  if st[1] and isopen(st[1], st[2]) then return other end
  return nil
end

-- apply moves task t by the fields f (status and anything else), keeps every
-- index and the encounter's open entry right, stamps updated_at and records
-- the event. When the move would reopen t while another task of its
-- encounter is open it changes nothing and returns that task's id.
local function apply(id, t, f, by, reason)
  local from = t.status
  local was = isopen(t.status, t.dlq)
  local will = isopen(f.status or t.status, f.dlq or t.dlq)
  local enc = t.encounter_id or ''
  if will and not was then
    local other = openTask(enc)
    if other and other ~= id then return other end
  end
  if (f.status or t.status) ~= 'PROCESSING' and t.claim then f.claim = false end
  unindex(id, t)
  f.updated_at = NOW
  put(id, t, f)
  index(id, t)
  if enc ~= '' then
    if will and not was then
      redis.call('HSET', B .. 'open', enc, id)
    elseif was and not will and redis.call('HGET', B .. 'open', enc) == id then
      redis.call('HDEL', B .. 'open', enc)
    end
  end
  event(id, from, t.status, by, reason)
  return nil
end
`

func script(body string) *redis.Script { return redis.NewScript(prelude + body) }

// createScript creates up to MaxBatchCreate tasks, all or nothing.
//
// KEYS[1] seq key (routing)
// ARGV[4] n, then n groups of 6: queue_id, encounter_id (empty = none),
// priority, max_attempts, payload JSON (empty = null), payload fingerprint.
//
// Returns {3, status, 'queue_id_reused', {}, queue_id} and writes nothing
// when a given queue_id names a stored task with another encounter_id or
// payload; {3, <empty>, 'located', {}, queue_id} and writes nothing when a
// queue_id has a locator in this shard (its task lives, or is being
// created, in another shard: locator.go). Otherwise {0, r1, ..., rn} in
// request order, ri = {0, id} when created or {1, id, fields} when an
// existing task answers (same queue_id, or the open task of the same
// encounter).
var createScript = script(`
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local o = 5 + i * 6
  local cur = redis.call('HMGET', tkey(ARGV[o]), 'status', 'encounter_id', 'fp')
  if cur[1] and (cur[2] ~= ARGV[o + 1] or cur[3] ~= ARGV[o + 5]) then
    return {3, cur[1], 'queue_id_reused', {}, ARGV[o]}
  end
  if not cur[1] and redis.call('EXISTS', B .. 'loc:' .. ARGV[o]) == 1 then return {3, '', 'located', {}, ARGV[o]} end
end
local out = {0}
for i = 0, n - 1 do
  local o = 5 + i * 6
  local id, enc = ARGV[o], ARGV[o + 1]
  local t = load(id)
  local other = nil
  if not t then other = openTask(enc) end
  if t then
    out[#out + 1] = {1, id, flat(t)}
  elseif other then
    out[#out + 1] = {1, other, flat(load(other))}
  else
    local seq = redis.call('INCR', B .. 'seq')
    t = {}
    local f = {queue_id = id, encounter_id = enc, status = 'PENDING', priority = ARGV[o + 2],
      attempts = 0, max_attempts = ARGV[o + 3], recoveries = 0, fp = ARGV[o + 5], dlq = '0',
      created_at = NOW, updated_at = NOW, seq = seq, pseq = seq}
    if ARGV[o + 4] ~= '' then f.payload = ARGV[o + 4] end
    put(id, t, f)
    index(id, t)
    redis.call('ZADD', B .. 'all', seq, id)
    if enc ~= '' then
      redis.call('ZADD', B .. 'enc:' .. enc, seq, id)
      redis.call('HSET', B .. 'open', enc, id)
    end
    event(id, '', 'PENDING', 'create', 'created')
    out[#out + 1] = {0, id}
  end
end
return out
`)

// heartbeatScript extends the claim of a PROCESSING task: heartbeat_at and
// updated_at = now, and its entries in active (the heartbeat monitor's
// index) and claimed (the visibility timeout's) move to now, so neither
// sweep takes a task whose worker is alive.
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] worker_id
//
// Returns the standard reply: 0 | 2 | 3 with reason 'not_processing' or
// 'wrong_worker'. No history event (heartbeats would flood it).
var heartbeatScript = script(`
local id, worker = ARGV[4], ARGV[5]
local t = load(id)
if not t then return reply(2) end
if t.status ~= 'PROCESSING' then return reply(3, t.status, 'not_processing', t) end
if t.worker_id ~= worker then return reply(3, t.status, 'wrong_worker', t) end
put(id, t, {heartbeat_at = NOW, updated_at = NOW})
redis.call('ZADD', B .. 'active', NOW, id)
redis.call('ZADD', B .. 'claimed', NOW, id)
return reply(0, '', '', t)
`)

// ackScript marks a task DONE and stores the ACK's experityActions.
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] encounter_id (empty = unchecked), ARGV[6]
// worker_id (empty = unchecked), ARGV[7] experityActions JSON, ARGV[8] its
// fingerprint
//
// Returns the standard reply: 0 done (from PROCESSING, or from PENDING: a
// late ACK of a task a sweep had recovered) | 1 'duplicate' (DONE with the
// same fingerprint) | 2 | 3 with reason 'different_payload' (DONE, other
// actions), 'wrong_worker' or 'not_processing' (ERROR) | 4
// 'encounter_mismatch'.
var ackScript = script(`
local id, enc, worker, actions, afp = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local t = load(id)
if not t then return reply(2) end
if enc ~= '' and t.encounter_id ~= enc then return reply(4, 'encounter_mismatch', '', t) end
if t.status == 'DONE' then
  if t.actions_fp == afp then return reply(1, 'duplicate', '', t) end
  return reply(3, t.status, 'different_payload', t)
end
local reason = 'acknowledged'
if t.status == 'PROCESSING' then
  if worker ~= '' and t.worker_id ~= worker then return reply(3, t.status, 'wrong_worker', t) end
elseif t.status == 'PENDING' then
  reason = 'late acknowledgement of a task recovered to PENDING'
else
  return reply(3, t.status, 'not_processing', t)
end
local by = t.worker_id or (worker ~= '' and worker) or 'ack'
apply(id, t, {status = 'DONE', actions = actions, actions_fp = afp}, by, reason)
return reply(0, '', '', t)
`)

// failScript records a failed attempt: ERROR, attempts+1, error_message;
// at max_attempts the task becomes a dead letter instead.
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] encounter_id (empty = unchecked), ARGV[6]
// worker_id (empty = unchecked), ARGV[7] error_message, ARGV[8] DLQ message
//
// Returns the standard reply: 0 with a = 'retry' (attempts < max) or 'dlq'
// (status ERROR, dlq = 1, error_message = DLQ message; the worker's message
// is kept in history) | 1 'duplicate' with b = 'retry' or 'dlq' (the same
// FAIL again: the task's last event is it) | 2 | 3 'not_processing' or
// 'wrong_worker' | 4 'encounter_mismatch'.
var failScript = script(`
local id, enc, worker, msg = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local t = load(id)
if not t then return reply(2) end
if enc ~= '' and t.encounter_id ~= enc then return reply(4, 'encounter_mismatch', '', t) end
if t.status ~= 'PROCESSING' then
  -- A FAIL sent again (the worker timed out waiting for the answer) finds
  -- its own FAIL as the task's last event: a duplicate, nothing changes.
  if t.status == 'ERROR' then
    local last = redis.call('LINDEX', B .. 'h:' .. id, -1)
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
  apply(id, t, {status = 'ERROR', attempts = attempts, error_message = msg}, by, msg)
  return reply(0, 'retry', '', t)
end
apply(id, t, {status = 'ERROR', attempts = attempts, error_message = ARGV[8], dlq = '1'}, by,
  msg .. ' (attempt ' .. attempts .. ' of ' .. t.max_attempts .. '; moved to the dead letter queue)')
return reply(0, 'dlq', '', t)
`)

// requeueScript brings an ERROR task (not a dead letter) back to PENDING —
// with ARGV[6], only while it has exactly that many attempts, i.e. while it
// still awaits the retry of the FAIL that scheduled this requeue.
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] priority, ARGV[6] expected attempts (empty: any)
//
// Returns the standard reply: 0 | 1 'already_pending' or
// 'already_processing' (a replayed requeue) or 'attempts_changed' (b = the
// task's attempts: a later FAIL awaits its own requeue) | 2 | 3 'done' or
// 'dlq'.
var requeueScript = script(`
local id, prio, want = ARGV[4], ARGV[5], ARGV[6] or ''
local t = load(id)
if not t then return reply(2) end
if t.status == 'PENDING' or t.status == 'PROCESSING' then return reply(1, 'already_' .. string.lower(t.status), '', t) end
if t.status == 'DONE' then return reply(3, t.status, 'done', t) end
if t.dlq == '1' then return reply(3, t.status, 'dlq', t) end
if want ~= '' and tonumber(t.attempts) ~= tonumber(want) then return reply(1, 'attempts_changed', t.attempts, t) end
local seq = redis.call('INCR', B .. 'seq')
local other = apply(id, t, {status = 'PENDING', priority = prio, pseq = seq,
  worker_id = false, claimed_at = false, heartbeat_at = false}, 'requeue', 'requeued with priority ' .. prio)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
`)

// replayScript brings a dead letter back to PENDING with attempts and
// recoveries reset.
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] priority
//
// Returns the standard reply: 0 | 2 | 3 'not_dlq' or 'encounter_open'
// (another task of the encounter was created meanwhile; extra = its id).
var replayScript = script(`
local id, prio = ARGV[4], ARGV[5]
local t = load(id)
if not t then return reply(2) end
if t.status ~= 'ERROR' or t.dlq ~= '1' then return reply(3, t.status, 'not_dlq', t) end
local seq = redis.call('INCR', B .. 'seq')
local other = apply(id, t, {status = 'PENDING', priority = prio, pseq = seq, attempts = 0, recoveries = 0, dlq = '0',
  worker_id = false, claimed_at = false, heartbeat_at = false}, 'replay', 'replayed from the dead letter queue with priority ' .. prio)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
`)

// dlqScript moves a task to the dead letter queue by hand (manual review).
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] error_message, ARGV[6] reason
//
// Returns the standard reply: 0 | 1 'already_dlq' | 2 | 3 'done'.
var dlqScript = script(`
local id = ARGV[4]
local t = load(id)
if not t then return reply(2) end
if t.status == 'DONE' then return reply(3, t.status, 'done', t) end
if t.dlq == '1' then return reply(1, 'already_dlq', '', t) end
apply(id, t, {status = 'ERROR', dlq = '1', error_message = ARGV[5]}, 'api', ARGV[6])
return reply(0, '', '', t)
`)

// statusScript is the generic admin transition (PATCH /queue/{id}/status),
// limited to the edges of the seed's diagram:
//
//	PENDING → PROCESSING; PROCESSING → DONE | ERROR | PENDING; ERROR → PENDING | ERROR
//
// KEYS[1] task key
// ARGV[4] queue_id, ARGV[5] new status, ARGV[6] '1' to set error_message,
// ARGV[7] error_message (empty clears), ARGV[8] '1' to increment attempts,
// ARGV[9] '1' to replace parsed_payload, ARGV[10] its base object (empty =
// none), ARGV[11] '1' if it has experityActions, ARGV[12] them, ARGV[13]
// their fingerprint, ARGV[14] dlq '1'/'0', ARGV[15] worker_id (for
// PROCESSING)
//
// A dead letter may only be amended and stay one (ERROR, and dlq '1' if
// parsed_payload is replaced): leaving the DLQ is Replay's, which also
// removes the dead letter's archived Asynq task and durable record.
//
// Returns the standard reply: 0 | 2 | 3 'illegal_transition' or
// 'dead_letter' (a dead letter would leave the DLQ).
var statusScript = script(`
local id, to = ARGV[4], ARGV[5]
local t = load(id)
if not t then return reply(2) end
local legal = {PENDING = {PROCESSING = true}, PROCESSING = {DONE = true, ERROR = true, PENDING = true},
  ERROR = {PENDING = true, ERROR = true}}
if not (legal[t.status] and legal[t.status][to]) then return reply(3, t.status, 'illegal_transition', t) end
if t.dlq == '1' and (to ~= 'ERROR' or (ARGV[9] == '1' and ARGV[14] ~= '1')) then
  return reply(3, t.status, 'dead_letter', t)
end
local f = {status = to}
local reason = 'status set to ' .. to
if ARGV[6] == '1' then
  if ARGV[7] == '' then f.error_message = false else
    f.error_message = ARGV[7]
    reason = reason .. ': ' .. ARGV[7]
  end
end
if ARGV[8] == '1' then f.attempts = tonumber(t.attempts) + 1 end
if ARGV[9] == '1' then
  f.pp = false
  if ARGV[10] ~= '' then f.pp = ARGV[10] end
  f.actions, f.actions_fp = false, false
  if ARGV[11] == '1' then f.actions, f.actions_fp = ARGV[12], ARGV[13] end
  f.dlq = ARGV[14]
end
if to ~= 'ERROR' then f.dlq = '0' end
if to == 'PENDING' then
  f.pseq = redis.call('INCR', B .. 'seq')
  f.worker_id, f.claimed_at, f.heartbeat_at = false, false, false
elseif to == 'PROCESSING' then
  f.worker_id = false
  if ARGV[15] ~= '' then f.worker_id = ARGV[15] end
  f.claimed_at, f.heartbeat_at = NOW, NOW
end
if f.dlq == '1' and t.dlq ~= '1' then reason = reason .. ' (moved to the dead letter queue)' end
-- nothing closed is reopened here (a dead letter stays one), so apply cannot refuse; checked all the same
local other = apply(id, t, f, 'api', reason)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
`)

// recoverScript is one batch of a stale-claim sweep: PROCESSING tasks whose
// score in the index is older than the cutoff go back to PENDING (HIGH,
// recoveries+1, error_message = reason) or, when recoveries reaches the max
// recoveries, to the DLQ. attempts (FAILs) is left alone: a silent worker
// is not a failed attempt, and a healthy long task is never swept at all
// (its heartbeats move both indexes forward).
//
// KEYS[1] the index: active (last activity) or claimed (last heartbeat or
// claim)
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size, ARGV[6] reason,
// ARGV[7] DLQ message, ARGV[8] by, ARGV[9] max recoveries
//
// Returns {scanned, {recovered ids}, {dead-lettered ids}}. Entries of tasks
// no longer PROCESSING are dropped from the index (counted in scanned).
var recoverScript = script(`
local idx, reason, by, maxrec = KEYS[1], ARGV[6], ARGV[8], tonumber(ARGV[9])
local ids = redis.call('ZRANGEBYSCORE', idx, '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local rec, dead = {}, {}
for _, id in ipairs(ids) do
  local t = load(id)
  if not t or t.status ~= 'PROCESSING' then
    redis.call('ZREM', idx, id)
  else
    local n = tonumber(t.recoveries or '0') + 1
    local why = reason
    if t.worker_id then why = why .. ' [worker ' .. t.worker_id .. ']' end
    why = why .. ' (recovery ' .. n .. ' of ' .. maxrec
    if n >= maxrec then
      apply(id, t, {status = 'ERROR', recoveries = n, dlq = '1', error_message = ARGV[7]}, by,
        why .. '; moved to the dead letter queue)')
      dead[#dead + 1] = id
    else
      local seq = redis.call('INCR', B .. 'seq')
      apply(id, t, {status = 'PENDING', priority = 'HIGH', pseq = seq, recoveries = n, error_message = reason,
        worker_id = false, claimed_at = false, heartbeat_at = false}, by, why .. '; no attempt counted)')
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
// KEYS[1] sla key
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size
//
// Returns {scanned, {promoted ids}}.
var promoteScript = script(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local out = {}
for _, id in ipairs(ids) do
  local t = load(id)
  if not t or t.status ~= 'PENDING' or t.priority == 'HIGH' then
    redis.call('ZREM', KEYS[1], id)
  else
    local from = t.priority
    apply(id, t, {priority = 'HIGH'}, 'sla', 'SLA promotion ' .. from .. ' -> HIGH: pending longer than the SLA')
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
// KEYS[1] retry key
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size, ARGV[6] reason
//
// Returns {scanned, {requeued ids}}.
var retryScript = script(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local out = {}
for _, id in ipairs(ids) do
  local t = load(id)
  if not t or t.status ~= 'ERROR' or t.dlq == '1' then
    redis.call('ZREM', KEYS[1], id)
  else
    local seq = redis.call('INCR', B .. 'seq')
    apply(id, t, {status = 'PENDING', priority = 'HIGH', pseq = seq,
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
// KEYS[1] done key
// ARGV[4] cutoff ms (exclusive), ARGV[5] batch size
//
// Returns {scanned, {purged ids}}. Entries of tasks that are gone or not
// DONE are dropped from the index (counted in scanned).
var purgeScript = script(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local out = {}
for _, id in ipairs(ids) do
  local t = load(id)
  if not t or t.status ~= 'DONE' then
    redis.call('ZREM', KEYS[1], id)
  else
    unindex(id, t)
    redis.call('ZREM', B .. 'all', id)
    local enc = t.encounter_id or ''
    if enc ~= '' then
      redis.call('ZREM', B .. 'enc:' .. enc, id)
      if redis.call('HGET', B .. 'open', enc) == id then redis.call('HDEL', B .. 'open', enc) end
    end
    redis.call('DEL', tkey(id), B .. 'h:' .. id)
    out[#out + 1] = id
  end
end
return {#ids, out}
`)

// backfillDoneScript indexes, one batch per call, the DONE tasks that
// became DONE before the done index existed (an older flowgate), walking
// status:DONE in creation order from a cursor kept in KEYS[1]; when the walk
// reaches the end the cursor becomes "complete" and the script does nothing
// more. Tasks already in done keep their score.
//
// KEYS[1] done:backfill key
// ARGV[4] batch size
//
// Returns {scanned, indexed, backfillComplete or backfillPartial}.
var backfillDoneScript = script(`
local batch = tonumber(ARGV[4])
local cur = redis.call('GET', KEYS[1])
if cur == 'complete' then return {0, 0, 1} end
local from = '-inf'
if cur then from = '(' .. cur end
local rows = redis.call('ZRANGEBYSCORE', B .. 'status:DONE', from, '+inf', 'WITHSCORES', 'LIMIT', 0, batch)
local added = 0
for i = 1, #rows, 2 do
  local at = redis.call('HGET', tkey(rows[i]), 'updated_at')
  if at then added = added + redis.call('ZADD', B .. 'done', 'NX', at, rows[i]) end
end
local n = #rows / 2
if n < batch then
  redis.call('SET', KEYS[1], 'complete')
  return {n, added, 1}
end
redis.call('SET', KEYS[1], rows[#rows])
return {n, added, 0}
`)

// importScript brings tasks of another queue (the old queue API) into the
// ledger, each as it was there, deciding task by task; the whole batch is
// one atomic script. A task is new (written with its status, attempts,
// priority, payload, parsed_payload parts and error_message; created_at
// as given, updated_at = now; indexed like any task of that state; its
// source history, then an import event, in its history), unchanged (its
// queue_id was imported before from the same content: the stored import
// fingerprint matches) or a conflict, which writes nothing.
//
// KEYS[1] seq key (routing)
// ARGV[4] '1' for a dry run (decide, write nothing), ARGV[5..] one task
// each, a JSON object of strings: id, enc (empty = none), status,
// priority, attempts, max_attempts, payload (JSON text, empty = null), fp
// (payload fingerprint), pp (parsed_payload base object, empty = none),
// actions and actions_fp (experityActions; actions_fp empty = none), dlq
// ('0'/'1'), error_message (empty = none), created_at (ms), ifp (import
// fingerprint), history (array of event JSON texts, oldest first), reason
// (the import event's).
//
// Returns {r1, ..., rn} in ARGV order, ri = {code, id, status, reason,
// extra}: 0 imported (a dry run: would be), status as imported | 1
// 'unchanged', status as stored | 3 conflict, status as stored (or as it
// would be imported), reason 'different_content' (imported before from
// other content), 'not_imported' (queue_id names a task that no import
// wrote), 'encounter_open' (extra = the encounter's open task) or
// 'located' (the queue_id has a locator in this shard: its task lives, or
// is being created, in another shard; locator.go). Tasks of
// one batch see the ones before them, but in a dry run, which writes
// nothing, they do not (the caller keeps track).
var importScript = script(`
local dry = ARGV[4] == '1'
local out = {}
for i = 5, #ARGV do
  local x = cjson.decode(ARGV[i])
  local id, enc = x.id, x.enc
  local cur = redis.call('HMGET', tkey(id), 'status', 'ifp')
  if not cur[1] and redis.call('EXISTS', B .. 'loc:' .. id) == 1 then
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
    if open then other = openTask(enc) end
    if other then
      out[#out + 1] = {3, id, x.status, 'encounter_open', other}
    elseif dry then
      out[#out + 1] = {0, id, x.status, 'imported', ''}
    else
      local seq = redis.call('INCR', B .. 'seq')
      local t = {}
      local f = {queue_id = id, encounter_id = enc, status = x.status, priority = x.priority,
        attempts = x.attempts, max_attempts = x.max_attempts, recoveries = 0, fp = x.fp, dlq = x.dlq,
        created_at = x.created_at, updated_at = NOW, seq = seq, pseq = seq, ifp = x.ifp}
      if x.payload ~= '' then f.payload = x.payload end
      if x.pp ~= '' then f.pp = x.pp end
      if x.actions_fp ~= '' then f.actions, f.actions_fp = x.actions, x.actions_fp end
      if x.error_message ~= '' then f.error_message = x.error_message end
      put(id, t, f)
      index(id, t)
      redis.call('ZADD', B .. 'all', seq, id)
      if enc ~= '' then
        redis.call('ZADD', B .. 'enc:' .. enc, seq, id)
        if open then redis.call('HSET', B .. 'open', enc, id) end
      end
      local h = B .. 'h:' .. id
      for _, e in ipairs(x.history) do redis.call('RPUSH', h, e) end
      event(id, '', x.status, 'import', x.reason)
      out[#out + 1] = {0, id, x.status, 'imported', ''}
    end
  end
end
return out
`)

// backfillDoneScript's third reply: whether the walk is complete.
const (
	backfillPartial  = 0 // more batches to go
	backfillComplete = 1 // the walk reached the end
)
