-- ack: marks a task DONE and stores the ACK's experityActions.
--
-- KEYS[17] task key, KEYS[18] its history, KEYS[19] (optional) the
-- request's replay key
-- ARGV[4] queue_id, ARGV[5] encounter_id (empty = unchecked), ARGV[6]
-- worker_id (empty = unchecked), ARGV[7] experityActions JSON, ARGV[8] its
-- fingerprint, ARGV[9] '1' for a brief reply (BRIEF's fields alone),
-- ARGV[10] the replay key's TTL in ms (with KEYS[19])
--
-- Returns the standard reply: 0 done (from PROCESSING, or from PENDING: a
-- late ACK of a task a sweep had recovered) | 1 'duplicate' (DONE with the
-- same fingerprint) | 2 | 3 with reason 'different_payload' (DONE, other
-- actions), 'wrong_worker' or 'not_processing' (ERROR) | 4
-- 'encounter_mismatch' | 5 'replayed' (KEYS[19] was set already; nothing
-- changed).
if seen(KEYS[19], ARGV[10]) then return reply(5, 'replayed') end
local c = begin(KEYS, ARGV)
local id, enc, worker, actions, afp = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local tk, hk = KEYS[17], KEYS[18]
local names = FIELDS
if ARGV[9] == '1' then names = BRIEF end
local t = load(tk, names)
if not t then return reply(2) end
if enc ~= '' and t.encounter_id ~= enc then return reply(4, 'encounter_mismatch', '', t, nil, names) end
if t.status == 'DONE' then
  if t.actions_fp == afp then return reply(1, 'duplicate', '', t, nil, names) end
  return reply(3, t.status, 'different_payload', t, nil, names)
end
local reason = 'acknowledged'
if t.status == 'PROCESSING' then
  if worker ~= '' and t.worker_id ~= worker then return reply(3, t.status, 'wrong_worker', t, nil, names) end
elseif t.status == 'PENDING' then
  reason = 'late acknowledgement of a task recovered to PENDING'
else
  return reply(3, t.status, 'not_processing', t, nil, names)
end
local by = t.worker_id or (worker ~= '' and worker) or 'ack'
apply(c, id, tk, hk, t, {status = 'DONE', actions = actions, actions_fp = afp}, by, reason)
return reply(0, '', '', t, nil, names)
