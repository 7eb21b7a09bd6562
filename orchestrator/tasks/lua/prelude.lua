-- The prelude of the ledger's scripts: every script of this directory runs
-- after it (scripts.go), so that each transition of the ledger is one Lua
-- script, atomic across any number of flowgate instances. The KEYS and
-- ARGV common to all:
--
--   KEYS[1..16] the shard's ledger keys, in keys.newKeys' order:
--               seq, all, open, active, claimed, sla, retry, dlq, done,
--               status:PENDING|PROCESSING|ERROR|DONE, pending:HIGH|NORMAL|LOW
--   KEYS[17..]  the script's own (a task and its history, a claim, ...)
--   ARGV[1] key base "<prefix>:<shard tag>:"   ARGV[2] now, Unix ms
--   ARGV[3] history cap
--
-- Script-specific ARGV start at 4. Scripts never call TIME: the caller's
-- clock decides, which keeps tests deterministic.
--
-- Every key a script may create or find missing is declared in KEYS, so
-- that on Redis Cluster, while a slot migration has split a shard's keys
-- between two masters, Redis refuses the script (ASK, TRYAGAIN) instead of
-- running it on half of them. The scripts that find their tasks in an
-- index (claim, the sweeps, cancel_claim) build those tasks' keys from
-- ARGV[1]; they read every such key before writing anything, and a task
-- named by an index whose hash or history is missing means the keys are
-- moving: the script writes nothing and answers TRYAGAIN (errMoving), which
-- the cluster client retries. The same check on a single Redis finds an
-- index entry whose task is gone, which no script leaves behind.
--
-- Single-task scripts answer the standard reply
--
--   {code, a, b, fields, extra}
--
-- code: 0 done, 1 no-op (nothing changed; a says why), 2 not found,
-- 3 conflict (a = current status, b = reason), 4 invalid (a = reason),
-- 5 replayed (the call's replay key was set already: see seen);
-- fields are the task's fields after the script, in taskFields' order
-- ({} when not found), extra the id of the encounter's other open task for
-- reason "encounter_open". parseReply and (*Ledger).check turn it into a
-- task or a typed error.
--
-- A script runs as EVAL (this prelude, then the script) or, where Redis has
-- FUNCTION, as a function of the ledger's library (functions.go), whose
-- helpers are built once, when the library loads. So nothing here is
-- assigned at run time: a script that needs the call's base, now or
-- history cap, or a helper that does, starts with
--
--   local c = begin(KEYS, ARGV)
--
-- and hands c on; the field lists, too, are parameters. A script names the
-- shard's keys by their place in KEYS: KEYS[SEQ], KEYS[PENDQ.HIGH].

-- Where the shard's ledger keys are in KEYS, in keys.newKeys' order:
-- KEYS[SEQ], KEYS[STATUS[status]], KEYS[PENDQ[priority]].
local SEQ, ALL, OPEN, ACTIVE, CLAIMED, SLA, RETRY, DLQ, DONE = 1, 2, 3, 4, 5, 6, 7, 8, 9
local STATUS = {PENDING = 10, PROCESSING = 11, ERROR = 12, DONE = 13}
local PENDQ = {HIGH = 14, NORMAL = 15, LOW = 16}

-- begin answers the call's context c: c.k its KEYS k, and from its ARGV a
-- c.base, c.now and c.hcap.
local function begin(k, a)
  return {k = k, base = a[1], now = a[2], hcap = tonumber(a[3])}
end

local function tkey(c, id) return c.base .. 't:' .. id end
local function hkey(c, id) return c.base .. 'h:' .. id end

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
local CLAIMREAD = {'status', 'seq', 'priority', 'dlq', 'queue_id', 'encounter_id', 'attempts', 'max_attempts',
  'recoveries', 'payload', 'pp', 'actions', 'error_message', 'created_at'}
local CLAIMOUT = {'queue_id', 'encounter_id', 'priority', 'attempts', 'max_attempts', 'recoveries', 'payload', 'pp',
  'actions', 'dlq', 'error_message', 'created_at'}

-- load reads the fields names (FIELDS when nil) of the task hash tk into a
-- table, or answers nil when the task is missing.
local function load(tk, names)
  names = names or FIELDS
  local v = redis.call('HMGET', tk, unpack(names))
  local t = {}
  for i = 1, #names do
    if v[i] then t[names[i]] = v[i] end
  end
  if not t.status then return nil end
  return t
end

-- record lists t's fields names (FIELDS when nil), false for an absent one.
local function record(t, names)
  names = names or FIELDS
  local out = {}
  for i = 1, #names do out[i] = t[names[i]] or false end
  return out
end

-- reply is the standard reply, with t's fields names (FIELDS when nil).
local function reply(code, a, b, t, extra, names)
  local f = {}
  if t then f = record(t, names) end
  return {code, a or '', b or '', f, extra or ''}
end

-- seen is the replay guard of a signed ACK or FAIL (ReplayCheck,
-- docs/tasks.md "Authentication"): when the call declares a replay key
-- (KEYS[19] of ack and fail) it is set for ttl ms, NX, before the script
-- acts, and seen answers whether it was there already — the script then
-- answers code 5 and changes nothing. No key: nothing checked.
local function seen(key, ttl)
  return key ~= nil and not redis.call('SET', key, '1', 'NX', 'PX', ttl)
end

local errMoving = 'TRYAGAIN flowgate: a task named by an index is not on this node (slot migration in progress?);' ..
  ' nothing was written'

-- loadAll reads the fields names (FIELDS when nil) of the tasks of ids
-- (found in an index) before anything is written: each hash and history
-- must be here, else the keys are moving (nil).
local function loadAll(c, ids, names)
  local ts = {}
  for i, id in ipairs(ids) do
    local t = load(tkey(c, id), names)
    if not t or redis.call('EXISTS', hkey(c, id)) == 0 then return nil end
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

-- event appends a transition to the history hk, kept to the history cap.
local function event(c, hk, from, to, by, reason)
  local n = redis.call('RPUSH', hk, cjson.encode({at = c.now, from = from, to = to, by = by, reason = reason}))
  if n > c.hcap then redis.call('LTRIM', hk, -c.hcap, -1) end
end

-- A task is open (blocks a second task for its encounter) while PENDING,
-- PROCESSING or ERROR awaiting a retry; DONE and dead letters are closed.
local function isopen(status, dlq)
  return status == 'PENDING' or status == 'PROCESSING' or (status == 'ERROR' and dlq ~= '1')
end

local function unindex(c, id, t)
  redis.call('ZREM', c.k[STATUS[t.status]], id)
  if t.status == 'PENDING' then
    redis.call('ZREM', c.k[PENDQ[t.priority]], id)
    if t.priority ~= 'HIGH' then redis.call('ZREM', c.k[SLA], id) end
  elseif t.status == 'PROCESSING' then
    redis.call('ZREM', c.k[ACTIVE], id)
  elseif t.status == 'ERROR' and t.dlq ~= '1' then
    redis.call('ZREM', c.k[RETRY], id)
  elseif t.status == 'DONE' then
    redis.call('ZREM', c.k[DONE], id)
  end
  if t.dlq == '1' then redis.call('ZREM', c.k[DLQ], id) end
end

local function index(c, id, t)
  redis.call('ZADD', c.k[STATUS[t.status]], t.seq, id)
  if t.status == 'PENDING' then
    redis.call('ZADD', c.k[PENDQ[t.priority]], t.pseq, id)
    if t.priority ~= 'HIGH' then redis.call('ZADD', c.k[SLA], t.created_at, id) end
  elseif t.status == 'PROCESSING' then
    redis.call('ZADD', c.k[ACTIVE], t.updated_at, id)
  elseif t.status == 'ERROR' and t.dlq ~= '1' then
    redis.call('ZADD', c.k[RETRY], t.updated_at, id)
  elseif t.status == 'DONE' then
    redis.call('ZADD', c.k[DONE], t.updated_at, id)
  end
  if t.dlq == '1' then redis.call('ZADD', c.k[DLQ], t.seq, id) end
end

-- openTask returns the id of the open task of encounter enc, if any. Every
-- transition keeps the open hash exact, so the entry is trusted here (its
-- task's keys are not declared); the ledger checks the task it names when
-- it answers with it, and clears an entry found stale (repair_open.lua).
local function openTask(c, enc)
  if enc == nil or enc == '' then return nil end
  return redis.call('HGET', c.k[OPEN], enc) or nil
end

-- apply moves task t (hash tk, history hk) by the fields f (status and
-- anything else), keeps every index and the encounter's open entry right,
-- stamps updated_at and records the event. When the move would reopen t
-- while another task of its encounter is open it changes nothing and
-- returns that task's id.
local function apply(c, id, tk, hk, t, f, by, reason)
  local from = t.status
  local was = isopen(t.status, t.dlq)
  local will = isopen(f.status or t.status, f.dlq or t.dlq)
  local enc = t.encounter_id or ''
  if will and not was then
    local other = openTask(c, enc)
    if other and other ~= id then return other end
  end
  -- A task leaving PROCESSING forgets its claim's token: set empty, not
  -- deleted, so that the move stays one HSET (no HDEL).
  if (f.status or t.status) ~= 'PROCESSING' and t.claim and t.claim ~= '' then f.claim = '' end
  unindex(c, id, t)
  f.updated_at = c.now
  put(tk, t, f)
  index(c, id, t)
  if enc ~= '' then
    if will and not was then
      redis.call('HSET', c.k[OPEN], enc, id)
    elseif was and not will and redis.call('HGET', c.k[OPEN], enc) == id then
      redis.call('HDEL', c.k[OPEN], enc)
    end
  end
  event(c, hk, from, t.status, by, reason)
  return nil
end
