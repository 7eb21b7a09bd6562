-- status: the generic admin transition (PATCH /queue/{id}/status,
-- docs/tasks.md), limited to these edges:
--
--   PENDING -> PROCESSING; PROCESSING -> DONE | ERROR | PENDING;
--   ERROR -> PENDING | ERROR
--
-- KEYS[17] task key, KEYS[18] its history
-- ARGV[4] queue_id, ARGV[5] new status, ARGV[6] '1' to set error_message,
-- ARGV[7] error_message (empty clears), ARGV[8] '1' to increment attempts,
-- ARGV[9] '1' to replace parsed_payload, ARGV[10] its base object (empty =
-- none), ARGV[11] '1' if it has experityActions, ARGV[12] them, ARGV[13]
-- their fingerprint, ARGV[14] dlq '1'/'0', ARGV[15] worker_id (for
-- PROCESSING)
--
-- A dead letter may only be amended and stay one (ERROR, and dlq '1' if
-- parsed_payload is replaced): leaving the DLQ is Replay's, which also
-- removes the dead letter's archived Asynq task and durable record.
--
-- Returns the standard reply: 0 | 2 | 3 'illegal_transition' or
-- 'dead_letter' (a dead letter would leave the DLQ).
local c = begin(KEYS, ARGV)
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
  f.pseq = redis.call('INCR', KEYS[SEQ])
  f.worker_id, f.claimed_at, f.heartbeat_at = false, false, false
elseif to == 'PROCESSING' then
  f.worker_id = false
  if ARGV[15] ~= '' then f.worker_id = ARGV[15] end
  f.claimed_at, f.heartbeat_at = c.now, c.now
end
if f.dlq == '1' and t.dlq ~= '1' then reason = reason .. ' (moved to the dead letter queue)' end
-- nothing closed is reopened here (a dead letter stays one), so apply
-- cannot refuse; checked all the same
local other = apply(c, id, tk, hk, t, f, 'api', reason)
if other then return reply(3, t.status, 'encounter_open', t, other) end
return reply(0, '', '', t)
