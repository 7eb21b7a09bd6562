package tasks

import "github.com/redis/go-redis/v9"

// Every transition of the ledger is one of the Lua scripts below, so it is
// atomic across any number of flowgate instances. Each script starts with
// the prelude, whose KEYS and ARGV are common to all:
//
//	KEYS[1..16] the shard's ledger keys, in keys.newKeys' order:
//	            seq, all, open, active, claimed, sla, retry, dlq, done,
//	            status:PENDING|PROCESSING|ERROR|DONE, pending:HIGH|NORMAL|LOW
//	KEYS[17..]  the script's own (a task and its history, a claim, …)
//	ARGV[1] key base "<prefix>:<shard tag>:"   ARGV[2] now, Unix ms   ARGV[3] history cap
//
// Script-specific ARGV start at 4. Scripts never call TIME: the caller's
// clock decides, which keeps tests deterministic.
//
// Every key a script may create or find missing is declared in KEYS, so
// that on Redis Cluster, while a slot migration has split a shard's keys
// between two masters, Redis refuses the script (ASK, TRYAGAIN) instead of
// running it on half of them. The scripts that find their tasks in an
// index (claim, sweeps, cancelClaim) build those tasks' keys from ARGV[1];
// they read every such key before writing anything, and a task named by an
// index whose hash or history is missing means the keys are moving: the
// script writes nothing and answers TRYAGAIN (errMoving), which the cluster
// client retries. The same check on a single Redis finds an index entry
// whose task is gone, which no script leaves behind.
//
// Single-task scripts answer the standard reply
//
//	{code, a, b, fields, extra}
//
// code: 0 done, 1 no-op (nothing changed; a says why), 2 not found,
// 3 conflict (a = current status, b = reason), 4 invalid (a = reason);
// fields are the task's fields after the script, in taskFields' order
// ({} when not found), extra
// the id of the encounter's other open task for reason "encounter_open".
// parseReply and (*Ledger).check turn it into a task or a typed error.
//
// A script runs as EVAL (prelude, then its body) or, where Redis has
// FUNCTION, as a function of the ledger's library (functions.go), whose
// helpers are built once when the library loads: the helpers below read
// the call's keys and arguments from the locals that begin sets.
const prelude = `
local B, NOW, HCAP, SEQ, ALL, OPEN, ACTIVE, CLAIMED, SLA, RETRY, DLQ, DONE
local STATUS, PENDQ = {}, {}
local function begin(k, a)
  B, NOW, HCAP = a[1], a[2], tonumber(a[3])
  SEQ, ALL, OPEN, ACTIVE, CLAIMED, SLA, RETRY, DLQ, DONE = k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9]
  STATUS.PENDING, STATUS.PROCESSING, STATUS.ERROR, STATUS.DONE = k[10], k[11], k[12], k[13]
  PENDQ.HIGH, PENDQ.NORMAL, PENDQ.LOW = k[14], k[15], k[16]
end

local function tkey(id) return B .. 't:' .. id end
local function hkey(id) return B .. 'h:' .. id end

-- Every field of a task hash, in taskFields' order (record.go): load reads
-- them all at once, and a reply gives them back in this order (false for
-- an absent field), from t, which every write mirrors. A script that
-- answers briefly (the ACK webhook's) reads and answers BRIEF alone
-- (briefFields): the fields its transition decides on and the webhook
-- reports.
local FIELDS = {'queue_id', 'encounter_id', 'status', 'priority', 'attempts', 'max_attempts', 'recoveries', 'payload',
  'fp', 'pp', 'actions', 'actions_fp', 'dlq', 'error_message', 'worker_id', 'created_at', 'updated_at', 'claimed_at',
  'heartbeat_at', 'claim', 'seq', 'pseq', 'ifp'}
local BRIEF = {'status', 'encounter_id', 'worker_id', 'attempts', 'priority', 'dlq', 'claim', 'seq', 'actions_fp'}
-- A claim reads CLAIMREAD of each PENDING task it takes (what the move to
-- PROCESSING decides on, and its answer) and answers CLAIMOUT (claimFields):
-- what it sets itself (status, worker_id, claimed_at, heartbeat_at,
-- updated_at) the ledger fills in, and the internal fields no task on the
-- wire shows are left out.
local CLAIMREAD = {'status', 'seq', 'priority', 'dlq', 'queue_id', 'encounter_id', 'attempts', 'max_attempts', 'recoveries',
  'payload', 'pp', 'actions', 'error_message', 'created_at'}
local CLAIMOUT = {'queue_id', 'encounter_id', 'priority', 'attempts', 'max_attempts', 'recoveries', 'payload', 'pp', 'actions',
  'dlq', 'error_message', 'created_at'}
local RF = FIELDS

local function load(tk)
  local v = redis.call('HMGET', tk, unpack(RF))
  local t = {}
  for i = 1, #RF do
    if v[i] then t[RF[i]] = v[i] end
  end
  if not t.status then return nil end
  return t
end

local function record(t, names)
  names = names or RF
  local out = {}
  for i = 1, #names do out[i] = t[names[i]] or false end
  return out
end

local function reply(code, a, b, t, extra)
  local f = {}
  if t then f = record(t) end
  return {code, a or '', b or '', f, extra or ''}
end

local errMoving = 'TRYAGAIN flowgate: a task named by an index is not on this node (slot migration in progress?); nothing was written'

-- loadAll reads the tasks of ids (found in an index) before anything is
-- written: each hash and history must be here, else the keys are moving.
local function loadAll(ids)
  local ts = {}
  for i, id in ipairs(ids) do
    local t = load(tkey(id))
    if not t or redis.call('EXISTS', hkey(id)) == 0 then return nil end
    ts[i] = t
  end
  return ts
end

-- put writes the fields f (a value of false deletes the field) to the task
-- hash tk and mirrors them into t.
local function put(tk, t, f)
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
  if #hs > 0 then redis.call('HSET', tk, unpack(hs)) end
  if #hd > 0 then redis.call('HDEL', tk, unpack(hd)) end
end

local function event(hk, from, to, by, reason)
  local n = redis.call('RPUSH', hk, cjson.encode({at = NOW, from = from, to = to, by = by, reason = reason}))
  if n > HCAP then redis.call('LTRIM', hk, -HCAP, -1) end
end

-- A task is open (blocks a second task for its encounter) while PENDING,
-- PROCESSING or ERROR awaiting a retry; DONE and dead letters are closed.
local function isopen(status, dlq)
  return status == 'PENDING' or status == 'PROCESSING' or (status == 'ERROR' and dlq ~= '1')
end

local function unindex(id, t)
  redis.call('ZREM', STATUS[t.status], id)
  if t.status == 'PENDING' then
    redis.call('ZREM', PENDQ[t.priority], id)
    if t.priority ~= 'HIGH' then redis.call('ZREM', SLA, id) end
  elseif t.status == 'PROCESSING' then
    redis.call('ZREM', ACTIVE, id)
  elseif t.status == 'ERROR' and t.dlq ~= '1' then
    redis.call('ZREM', RETRY, id)
  elseif t.status == 'DONE' then
    redis.call('ZREM', DONE, id)
  end
  if t.dlq == '1' then redis.call('ZREM', DLQ, id) end
end

local function index(id, t)
  redis.call('ZADD', STATUS[t.status], t.seq, id)
  if t.status == 'PENDING' then
    redis.call('ZADD', PENDQ[t.priority], t.pseq, id)
    if t.priority ~= 'HIGH' then redis.call('ZADD', SLA, t.created_at, id) end
  elseif t.status == 'PROCESSING' then
    redis.call('ZADD', ACTIVE, t.updated_at, id)
  elseif t.status == 'ERROR' and t.dlq ~= '1' then
    redis.call('ZADD', RETRY, t.updated_at, id)
  elseif t.status == 'DONE' then
    redis.call('ZADD', DONE, t.updated_at, id)
  end
  if t.dlq == '1' then redis.call('ZADD', DLQ, t.seq, id) end
end

-- openTask returns the id of the open task of encounter enc, if any. Every
-- transition keeps the open hash exact, so the entry is trusted here (its
-- task's keys are not declared); the ledger checks the task it names when
-- it answers with it, and clears an entry found stale (repairOpenScript).
local function openTask(enc)
  if enc == nil or enc == '' then return nil end
  return redis.call('HGET', OPEN, enc) or nil
end

-- apply moves task t (hash tk, history hk) by the fields f (status and
-- anything else), keeps every index and the encounter's open entry right,
-- stamps updated_at and records the event. When the move would reopen t
-- while another task of its encounter is open it changes nothing and
-- returns that task's id.
local function apply(id, tk, hk, t, f, by, reason)
  local from = t.status
  local was = isopen(t.status, t.dlq)
  local will = isopen(f.status or t.status, f.dlq or t.dlq)
  local enc = t.encounter_id or ''
  if will and not was then
    local other = openTask(enc)
    if other and other ~= id then return other end
  end
  -- A task leaving PROCESSING forgets its claim's token: set empty, not
  -- deleted, so that the move stays one HSET (no HDEL).
  if (f.status or t.status) ~= 'PROCESSING' and t.claim and t.claim ~= '' then f.claim = '' end
  unindex(id, t)
  f.updated_at = NOW
  put(tk, t, f)
  index(id, t)
  if enc ~= '' then
    if will and not was then
      redis.call('HSET', OPEN, enc, id)
    elseif was and not will and redis.call('HGET', OPEN, enc) == id then
      redis.call('HDEL', OPEN, enc)
    end
  end
  event(hk, from, t.status, by, reason)
  return nil
end
`

// script declares the ledger script name with body (run after the
// prelude, with KEYS and ARGV as in EVAL).
func script(name, body string) *proc {
	p := newProc(name, body)
	procs = append(procs, p)
	return p
}

// newProc is a script that is not part of the library (a test's): it runs
// as EVAL.
func newProc(name, body string) *proc {
	return &proc{name: name, body: body, eval: redis.NewScript(prelude + "\nbegin(KEYS, ARGV)\n" + body)}
}

// createScript creates up to MaxBatchCreate tasks, all or nothing.
//
// KEYS[17+4i..20+4i] item i's task key, history key, encounter key (the
// task key again when it has no encounter) and locator key (the task key
// again with one shard: no check)
// ARGV[4] n, then n groups of 6: queue_id, encounter_id (empty = none),
// priority, max_attempts, payload JSON (empty = null), payload fingerprint.
//
// Returns {3, status, 'queue_id_reused', {}, queue_id} and writes nothing
// when a given queue_id names a stored task with another encounter_id or
// payload; {3, <empty>, 'located', {}, queue_id} and writes nothing when a
// queue_id has a locator in this shard (its task lives, or is being
// created, in another shard: locator.go). Otherwise {0, r1, ..., rn} in
// request order, ri = {0, id} when created, {1, id, fields} when a task
// with that queue_id answers, or {2, other} when the open task other of
// the same encounter answers (its keys are not declared: the ledger reads
// it).
var createScript = script("create", `
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local o = 5 + i * 6
  local cur = redis.call('HMGET', KEYS[17 + i * 4], 'status', 'encounter_id', 'fp')
  if cur[1] and (cur[2] ~= ARGV[o + 1] or cur[3] ~= ARGV[o + 5]) then
    return {3, cur[1], 'queue_id_reused', {}, ARGV[o]}
  end
  local lk = KEYS[20 + i * 4]
  if not cur[1] and lk ~= KEYS[17 + i * 4] and redis.call('EXISTS', lk) == 1 then return {3, '', 'located', {}, ARGV[o]} end
end
local out = {0}
for i = 0, n - 1 do
  local o = 5 + i * 6
  local id, enc = ARGV[o], ARGV[o + 1]
  local tk, hk, ek = KEYS[17 + i * 4], KEYS[18 + i * 4], KEYS[19 + i * 4]
  local other = nil
  local exists = redis.call('EXISTS', tk) == 1
  if not exists then other = openTask(enc) end
  if exists then
    out[#out + 1] = {1, id, record(load(tk))}
  elseif other then
    out[#out + 1] = {2, other}
  else
    local seq = redis.call('INCR', SEQ)
    local t = {}
    local f = {queue_id = id, encounter_id = enc, status = 'PENDING', priority = ARGV[o + 2],
      attempts = 0, max_attempts = ARGV[o + 3], recoveries = 0, fp = ARGV[o + 5], dlq = '0',
      created_at = NOW, updated_at = NOW, seq = seq, pseq = seq}
    if ARGV[o + 4] ~= '' then f.payload = ARGV[o + 4] end
    put(tk, t, f)
    index(id, t)
    redis.call('ZADD', ALL, seq, id)
    if enc ~= '' then
      redis.call('ZADD', ek, seq, id)
      redis.call('HSET', OPEN, enc, id)
    end
    event(hk, '', 'PENDING', 'create', 'created')
    out[#out + 1] = {0, id}
  end
end
return out
`)

// repairOpenScript clears the open entry of encounter enc when it still
// names task other and other is closed or gone: an entry no transition
// leaves behind, cleared when the ledger meets it.
//
// KEYS[17] other's task key
// ARGV[4] encounter_id, ARGV[5] other's id
//
// Returns 1 when the entry was cleared, else 0.
var repairOpenScript = script("repairOpen", `
if redis.call('HGET', OPEN, ARGV[4]) ~= ARGV[5] then return 0 end
local st = redis.call('HMGET', KEYS[17], 'status', 'dlq')
if st[1] and isopen(st[1], st[2]) then return 0 end
redis.call('HDEL', OPEN, ARGV[4])
return 1
`)

// heartbeatScript extends the claim of a PROCESSING task: heartbeat_at and
// updated_at = now, and its entry in active (the index of both recovery
// sweeps) moves to now, so neither takes a task whose worker is alive.
//
// A task claimed before ARGV[6] (now − TASK_MAX_PROCESSING) is not
// extended: its worker has had the longest processing time flowgate
// allows, so a job that hangs while its heartbeat thread lives gives the
// task back — the heartbeat monitor recovers it once its last extension
// is stale, and counts the recovery.
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] worker_id, ARGV[6] the oldest claimed_at
// still extended (unix ms; absent or 0: no bound)
//
// Returns the standard reply: 0 | 2 | 3 with reason 'not_processing',
// 'wrong_worker' or 'max_processing'. No history event (heartbeats would
// flood it).
var heartbeatScript = script("heartbeat", `
local id, worker = ARGV[4], ARGV[5]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status ~= 'PROCESSING' then return reply(3, t.status, 'not_processing', t) end
if t.worker_id ~= worker then return reply(3, t.status, 'wrong_worker', t) end
if tonumber(t.claimed_at or '0') < tonumber(ARGV[6] or '0') then return reply(3, t.status, 'max_processing', t) end
put(tk, t, {heartbeat_at = NOW, updated_at = NOW})
redis.call('ZADD', ACTIVE, NOW, id)
-- The claimed index of a version before this one, while it still runs
-- beside this one (a rolling upgrade): its sweep must see the heartbeat.
redis.call('ZADD', CLAIMED, 'XX', NOW, id)
return reply(0, '', '', t)
`)

// ackScript marks a task DONE and stores the ACK's experityActions.
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] encounter_id (empty = unchecked), ARGV[6]
// worker_id (empty = unchecked), ARGV[7] experityActions JSON, ARGV[8] its
// fingerprint, ARGV[9] '1' for a brief reply (BRIEF's fields alone)
//
// Returns the standard reply: 0 done (from PROCESSING, or from PENDING: a
// late ACK of a task a sweep had recovered) | 1 'duplicate' (DONE with the
// same fingerprint) | 2 | 3 with reason 'different_payload' (DONE, other
// actions), 'wrong_worker' or 'not_processing' (ERROR) | 4
// 'encounter_mismatch'.
var ackScript = script("ack", `
local id, enc, worker, actions, afp = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local tk, hk = KEYS[17], KEYS[18]
if ARGV[9] == '1' then RF = BRIEF end
local t = load(tk)
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
apply(id, tk, hk, t, {status = 'DONE', actions = actions, actions_fp = afp}, by, reason)
return reply(0, '', '', t)
`)

// failScript records a failed attempt: ERROR, attempts+1, error_message;
// at max_attempts the task becomes a dead letter instead.
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] encounter_id (empty = unchecked), ARGV[6]
// worker_id (empty = unchecked), ARGV[7] error_message, ARGV[8] DLQ message
//
// Returns the standard reply: 0 with a = 'retry' (attempts < max) or 'dlq'
// (status ERROR, dlq = 1, error_message = DLQ message; the worker's message
// is kept in history) | 1 'duplicate' with b = 'retry' or 'dlq' (the same
// FAIL again: the task's last event is it) | 2 | 3 'not_processing' or
// 'wrong_worker' | 4 'encounter_mismatch'.
var failScript = script("fail", `
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
  apply(id, tk, hk, t, {status = 'ERROR', attempts = attempts, error_message = msg}, by, msg)
  return reply(0, 'retry', '', t)
end
apply(id, tk, hk, t, {status = 'ERROR', attempts = attempts, error_message = ARGV[8], dlq = '1'}, by,
  msg .. ' (attempt ' .. attempts .. ' of ' .. t.max_attempts .. '; moved to the dead letter queue)')
return reply(0, 'dlq', '', t)
`)

// requeueScript brings an ERROR task (not a dead letter) back to PENDING —
// with ARGV[6], only while it has exactly that many attempts, i.e. while it
// still awaits the retry of the FAIL that scheduled this requeue.
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] priority, ARGV[6] expected attempts (empty: any)
//
// Returns the standard reply: 0 | 1 'already_pending' or
// 'already_processing' (a replayed requeue) or 'attempts_changed' (b = the
// task's attempts: a later FAIL awaits its own requeue) | 2 | 3 'done' or
// 'dlq'.
var requeueScript = script("requeue", `
local id, prio, want = ARGV[4], ARGV[5], ARGV[6] or ''
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status == 'PENDING' or t.status == 'PROCESSING' then return reply(1, 'already_' .. string.lower(t.status), '', t) end
if t.status == 'DONE' then return reply(3, t.status, 'done', t) end
if t.dlq == '1' then return reply(3, t.status, 'dlq', t) end
if want ~= '' and tonumber(t.attempts) ~= tonumber(want) then return reply(1, 'attempts_changed', t.attempts, t) end
local seq = redis.call('INCR', SEQ)
local other = apply(id, tk, hk, t, {status = 'PENDING', priority = prio, pseq = seq,
  worker_id = false, claimed_at = false, heartbeat_at = false}, 'requeue', 'requeued with priority ' .. prio)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
`)

// replayScript brings a dead letter back to PENDING with attempts and
// recoveries reset.
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] priority
//
// Returns the standard reply: 0 | 2 | 3 'not_dlq' or 'encounter_open'
// (another task of the encounter was created meanwhile; extra = its id).
var replayScript = script("replay", `
local id, prio = ARGV[4], ARGV[5]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status ~= 'ERROR' or t.dlq ~= '1' then return reply(3, t.status, 'not_dlq', t) end
local seq = redis.call('INCR', SEQ)
local other = apply(id, tk, hk, t, {status = 'PENDING', priority = prio, pseq = seq, attempts = 0, recoveries = 0, dlq = '0',
  worker_id = false, claimed_at = false, heartbeat_at = false}, 'replay', 'replayed from the dead letter queue with priority ' .. prio)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
`)

// dlqScript moves a task to the dead letter queue by hand (manual review).
//
// KEYS[17] task key, KEYS[18] its history
// ARGV[4] queue_id, ARGV[5] error_message, ARGV[6] reason
//
// Returns the standard reply: 0 | 1 'already_dlq' | 2 | 3 'done'.
var dlqScript = script("dlq", `
local id = ARGV[4]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
if not t then return reply(2) end
if t.status == 'DONE' then return reply(3, t.status, 'done', t) end
if t.dlq == '1' then return reply(1, 'already_dlq', '', t) end
apply(id, tk, hk, t, {status = 'ERROR', dlq = '1', error_message = ARGV[5]}, 'api', ARGV[6])
return reply(0, '', '', t)
`)

// statusScript is the generic admin transition (PATCH /queue/{id}/status),
// limited to the edges of the seed's diagram:
//
//	PENDING → PROCESSING; PROCESSING → DONE | ERROR | PENDING; ERROR → PENDING | ERROR
//
// KEYS[17] task key, KEYS[18] its history
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
var statusScript = script("status", `
local id, to = ARGV[4], ARGV[5]
local tk, hk = KEYS[17], KEYS[18]
local t = load(tk)
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
  f.pseq = redis.call('INCR', SEQ)
  f.worker_id, f.claimed_at, f.heartbeat_at = false, false, false
elseif to == 'PROCESSING' then
  f.worker_id = false
  if ARGV[15] ~= '' then f.worker_id = ARGV[15] end
  f.claimed_at, f.heartbeat_at = NOW, NOW
end
if f.dlq == '1' and t.dlq ~= '1' then reason = reason .. ' (moved to the dead letter queue)' end
-- nothing closed is reopened here (a dead letter stays one), so apply cannot refuse; checked all the same
local other = apply(id, tk, hk, t, f, 'api', reason)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
`)
