package holds

import "github.com/redis/go-redis/v9"

// Every script below declares all the keys it touches; with the hash tag
// (keys.go) they lie in one slot, so each runs unchanged on Redis Cluster.
// Times are unix milliseconds from the engine's clock (ARGV "now"), TTLs
// milliseconds. A hold's owner is (clientId, face) read from the JSON on
// the canonical slot key.
//
// With several shards (keys.go) every key of these scripts is in the
// hold's resource shard. A client index that lives in another shard is
// passed as a placeholder — the records key again — which the scripts
// recognise (client index == records) and leave alone; the caller then
// updates the index in the client's shard with the scripts of split.go.

// quotaLua is the quota check claimScript and reserveScript share:
// quotaFull drops the client index idx's expired entries and, when max > 0
// and the index holds max live holds, answers the quota reply {-1, count,
// ms until the earliest ends}; nil when there is room.
const quotaLua = `
local function quotaFull(idx, max, now)
  if max <= 0 then return nil end
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
  local n = redis.call('ZCARD', idx)
  if n < max then return nil end
  local first = redis.call('ZRANGE', idx, 0, 0, 'WITHSCORES')
  return {-1, tostring(n), tonumber(first[2]) - now}
end
`

// decodeHold is shared: the table of a hold JSON, or nil.
const decodeHold = `
local function dec(v)
  if not v then return nil end
  local ok, t = pcall(cjson.decode, v)
  if ok and type(t) == 'table' then return t end
  return nil
end
local function raise(k, ttl)
  local p = redis.call('PTTL', k)
  if p >= 0 and p < ttl then redis.call('PEXPIRE', k, ttl) end
end
-- index records a hold's expiry in the indexes; client is false when the
-- client's index lives in another shard.
local function index(holdId, exp, client, expiry, active, ttl)
  if client then
    redis.call('ZADD', client, exp, holdId)
    local p = redis.call('PTTL', client)
    if p < ttl then redis.call('PEXPIRE', client, ttl) end
  end
  redis.call('ZADD', expiry, exp, holdId)
  redis.call('ZADD', active, exp, holdId)
end
-- ownHold is, when the slot's hold h (slot TTL pttl) is client's on face
-- for typeId and not booked, its remaining TTL: the slot's or the face
-- key's, the lower, raised to ttl with its indexes when refresh is '1';
-- nil otherwise. KEYS as claimScript's: 1 slot, 2 face key, 3 client
-- index (or 4 again: in another shard), 5 expiry, 6 active.
local function ownHold(h, pttl, client, face, typeId, refresh, ttl, now)
  if not (h and h.clientId == client and h.face == face and h.appointmentTypeId == typeId and not h.appointmentId) then
    return nil
  end
  local fp = redis.call('PTTL', KEYS[2])
  if fp >= 0 and fp < pttl then pttl = fp end
  if refresh == '1' and pttl < ttl then
    raise(KEYS[1], ttl)
    raise(KEYS[2], ttl)
    index(h.holdId, now + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
    pttl = ttl
  end
  return pttl
end
`

// claimScript takes a slot for a client: cooldown, owner, quota, claim,
// indexes and event in one step.
//
//	KEYS[1] slot (canonical)  KEYS[2] face key   KEYS[3] client index
//	KEYS[4] records           KEYS[5] expiry     KEYS[6] active
//	KEYS[7] cooldown (client_limit)
//	(client in another shard: KEYS[3] and KEYS[7] are KEYS[4] again, ARGV[8]
//	0 and ARGV[9] "0": reserveScript checked them in the client's shard)
//	ARGV[1] hold JSON (slot value)  ARGV[2] face value  ARGV[3] holdId
//	ARGV[4] clientId  ARGV[5] face  ARGV[6] ttl ms  ARGV[7] now ms
//	ARGV[8] max holds (<= 0: no quota)  ARGV[9] "1": check the cooldown
//	ARGV[10] channel  ARGV[11] "hold" event JSON  ARGV[12] record JSON
//	ARGV[13] "1": an own hold's TTLs are raised to ARGV[6] (IVA Reserve)
//	ARGV[14] appointmentTypeId
//
// Returns {code, value, ms}:
//
//	 1 claimed (value ARGV[1], ms the TTL)
//	 2 this owner holds it already for this type (value its hold JSON, ms its TTL:
//	   the shorter of the slot's and the face key's); a slot this owner
//	   booked on the web face (its booked claim, with an appointmentId) is
//	   taken (0), not held
//	 0 taken by someone else (value the holder's JSON, ms its TTL)
//	-1 quota reached (value the count, ms until the client's earliest hold ends)
//	-2 cooldown (ms its remaining TTL, -1 when it has none)
var claimScript = redis.NewScript(decodeHold + quotaLua + `
local ttl = tonumber(ARGV[6])
local now = tonumber(ARGV[7])
if ARGV[9] == '1' then
  local cd = redis.call('PTTL', KEYS[7])
  if cd > 0 or cd == -1 then return {-2, '', cd} end
end
local cur = redis.call('GET', KEYS[1])
if cur then
  local pttl = redis.call('PTTL', KEYS[1])
  local own = ownHold(dec(cur), pttl, ARGV[4], ARGV[5], ARGV[14], ARGV[13], ttl, now)
  if own then return {2, cur, own} end
  return {0, cur, pttl}
end
local full = quotaFull(KEYS[3], tonumber(ARGV[8]), now)
if full then return full end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
redis.call('HSET', KEYS[4], ARGV[3], ARGV[12])
index(ARGV[3], now + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('PUBLISH', ARGV[10], ARGV[11])
return {1, ARGV[1], ttl}
`)

// claimScript's reply codes.
const (
	claimTaken    int64 = 0  // taken by someone else
	claimNew      int64 = 1  // claimed
	claimOwn      int64 = 2  // this owner holds it already for this type
	claimQuota    int64 = -1 // quota reached
	claimCooldown int64 = -2 // the client is cooling down
)

// heartbeatScript extends a live hold and its indexes together.
//
//	KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
//	KEYS[5] expiry  KEYS[6] active
//	ARGV[1] holdId  ARGV[2] clientId  ARGV[3] ttl ms  ARGV[4] now ms
//	ARGV[5] new hold JSON  ARGV[6] new face value ("" = keep the face's value)
//	ARGV[7] new record JSON  ARGV[8] channel  ARGV[9] "heartbeat" event JSON
//
// Returns 1 extended, 0 expired, unknown, not this client's or booked
// (nothing changed). A booked web hold's slot key is its booked claim,
// which embeds the hold: the record (deleted by the confirm) and the
// claim's appointmentId tell it from a live hold, so a heartbeat that read
// the record just before a confirm does not turn the booking back into a
// 30 s hold.
var heartbeatScript = redis.NewScript(decodeHold + `
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 0 then return 0 end
local h = dec(redis.call('GET', KEYS[1]))
if not h or h.holdId ~= ARGV[1] or h.clientId ~= ARGV[2] or h.appointmentId then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[1], ARGV[5], 'PX', ttl)
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[2], ARGV[6], 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[2], ttl)
end
redis.call('HSET', KEYS[4], ARGV[1], ARGV[7])
index(ARGV[1], tonumber(ARGV[4]) + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('PUBLISH', ARGV[8], ARGV[9])
return 1
`)

// heartbeatScript's replies.
const (
	heartbeatMissed   = 0 // expired, unknown, not this client's or booked: nothing changed
	heartbeatExtended = 1
)

// releaseScript ends a hold (Release, ReleaseSlot).
//
//	KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
//	KEYS[5] expiry  KEYS[6] active
//	ARGV[1] holdId  ARGV[2] clientId ("" = whoever holds it)
//	ARGV[3] channel  ARGV[4] "release" event JSON
//
// Returns 1 released (event published), 0 unknown or already gone,
// -1 another client's (nothing changed). The face key is deleted only
// while the slot key still names this hold: after expiry it may already
// be a newer hold's — then the indexes are cleaned without a "release"
// (the slot is not free) and 0 is returned.
var releaseScript = redis.NewScript(decodeHold + `
local r = dec(redis.call('HGET', KEYS[4], ARGV[1]))
if not r then return 0 end
if ARGV[2] ~= '' and r.hold.clientId ~= ARGV[2] then return -1 end
local cur = redis.call('GET', KEYS[1])
local h = dec(cur)
local mine = h and h.holdId == ARGV[1]
if mine then
  redis.call('DEL', KEYS[1], KEYS[2])
end
if KEYS[3] ~= KEYS[4] then redis.call('ZREM', KEYS[3], ARGV[1]) end
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if cur and not mine then return 0 end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`)

// releaseScript's replies.
const (
	releaseForeign  = -1 // another client's: nothing changed
	releaseGone     = 0  // unknown or already gone
	releaseReleased = 1  // released, "release" published
)

// confirmScript turns a web hold into a booking: verify, end the hold and
// its indexes, keep the canonical slot key as the booking's claim until the
// slot ends (so the IVA face's Reserve refuses it and its Filter drops it),
// publish "confirm", set the cooldown and its index by appointment id.
//
//	KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
//	KEYS[5] expiry  KEYS[6] active  KEYS[7] cooldown  KEYS[8] cooldown index
//	(keys in other shards: KEYS[3], KEYS[7], KEYS[8] are KEYS[4] again and
//	ARGV[5] is 0; Confirm sets the cooldown itself, split.go)
//	ARGV[1] holdId  ARGV[2] clientId  ARGV[3] channel  ARGV[4] "confirm" event JSON
//	ARGV[5] cooldown ms (<= 0: none)  ARGV[6] cooldown value JSON
//	ARGV[7] booked claim JSON  ARGV[8] ms until the slot ends (<= 0: delete the key)
//
// Returns 0 confirmed, 1 no such live hold, 2 another client's (nothing changed).
var confirmScript = redis.NewScript(decodeHold + `
local r = dec(redis.call('HGET', KEYS[4], ARGV[1]))
if not r then return 1 end
if r.hold.clientId ~= ARGV[2] then return 2 end
local h = dec(redis.call('GET', KEYS[1]))
if not h or h.holdId ~= ARGV[1] then return 1 end
local keep = tonumber(ARGV[8])
if keep > 0 then
  redis.call('SET', KEYS[1], ARGV[7], 'PX', keep)
  redis.call('DEL', KEYS[2])
else
  redis.call('DEL', KEYS[1], KEYS[2])
end
if KEYS[3] ~= KEYS[4] then redis.call('ZREM', KEYS[3], ARGV[1]) end
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
local cd = tonumber(ARGV[5])
if cd > 0 then
  redis.call('SET', KEYS[7], ARGV[6], 'PX', cd)
  redis.call('SET', KEYS[8], KEYS[7], 'PX', cd)
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 0
`)

// confirmScript's replies.
const (
	confirmDone    = 0
	confirmNoHold  = 1 // no such live hold
	confirmForeign = 2 // another client's: nothing changed
)

// keepScript is the IVA face's Confirm: the booked slot stays held for
// ARGV[5] ms so it is not re-offered; the hold is marked confirmed (its
// expiry is then silent) and "confirm" is published.
//
//	KEYS[1] slot  KEYS[2] face  KEYS[3] client  KEYS[4] records
//	KEYS[5] expiry  KEYS[6] active
//	ARGV[1] expected holdId ("" = the slot was free)  ARGV[2] clientId  ARGV[3] face
//	ARGV[4] now ms  ARGV[5] ttl ms  ARGV[6] channel
//	ARGV[7] hold JSON  ARGV[8] face value  ARGV[9] record JSON  ARGV[10] "confirm" event JSON
//	(7–10 describe the expected hold, or a new one under a new id when ARGV[1] is "")
//	ARGV[11] the new hold's id
//
// Returns {code, value, ms}: 1 kept (own hold extended), 2 retaken (was free),
// 3 changed since read (retry), 0 another owner's (value its JSON, ms its TTL).
var keepScript = redis.NewScript(decodeHold + `
local ttl = tonumber(ARGV[5])
local exp = tonumber(ARGV[4]) + ttl
local cur = redis.call('GET', KEYS[1])
local h = dec(cur)
if cur and not (h and h.clientId == ARGV[2] and h.face == ARGV[3]) then
  return {0, cur, redis.call('PTTL', KEYS[1])}
end
if (h and h.holdId or '') ~= ARGV[1] then return {3, '', 0} end
local id = ARGV[1]
local code = 1
if id == '' then id = ARGV[11]; code = 2 end
redis.call('SET', KEYS[1], ARGV[7], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[8], 'PX', ttl)
redis.call('HSET', KEYS[4], id, ARGV[9])
index(id, exp, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('PUBLISH', ARGV[6], ARGV[10])
return {code, ARGV[7], ttl}
`)

// adoptScript hands a live web hold over to another owner on the same
// slot (Adopt): the web hold's keys and indexes go without a "release",
// the new hold takes the slot key, and the hand-over is recorded.
//
//	KEYS[1] slot  KEYS[2] new face key  KEYS[3] new client index  KEYS[4] records
//	KEYS[5] expiry  KEYS[6] new active  KEYS[7] web hold's face key
//	KEYS[8] web client's index  KEYS[9] web hold's active  KEYS[10] adoption record
//	(a client index in another shard: KEYS[3] or KEYS[8] is KEYS[4] again)
//	ARGV[1] new hold JSON  ARGV[2] face value  ARGV[3] new holdId  ARGV[4] new clientId
//	ARGV[5] new face  ARGV[6] ttl ms  ARGV[7] now ms  ARGV[8] channel
//	ARGV[9] "hold" event JSON  ARGV[10] record JSON  ARGV[11] "1": refresh an own hold
//	ARGV[12] appointmentTypeId  ARGV[13] web holdId  ARGV[14] web clientId
//	ARGV[15] the web face's name  ARGV[16] adoption JSON  ARGV[17] its PX
//	ARGV[18] the web hold type's channel when it differs ("" = none)
//
// Returns {code, value, ms}: 1 adopted, or claimed where the slot was free
// (value ARGV[1]); 2 the new owner holds it already on its face (as
// claimScript's 2, TTLs raised with ARGV[11]); 0 anyone else's (value the
// holder's JSON, ms its TTL; nothing changed).
var adoptScript = redis.NewScript(decodeHold + `
local ttl = tonumber(ARGV[6])
local now = tonumber(ARGV[7])
local cur = redis.call('GET', KEYS[1])
if cur then
  local pttl = redis.call('PTTL', KEYS[1])
  local h = dec(cur)
  local own = ownHold(h, pttl, ARGV[4], ARGV[5], ARGV[12], ARGV[11], ttl, now)
  if own then return {2, cur, own} end
  if not (h and h.holdId == ARGV[13] and h.clientId == ARGV[14] and h.face == ARGV[15] and not h.appointmentId) then
    return {0, cur, pttl}
  end
  redis.call('DEL', KEYS[7])
  if KEYS[8] ~= KEYS[4] then redis.call('ZREM', KEYS[8], ARGV[13]) end
  redis.call('ZREM', KEYS[5], ARGV[13])
  redis.call('ZREM', KEYS[9], ARGV[13])
  redis.call('HDEL', KEYS[4], ARGV[13])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
redis.call('HSET', KEYS[4], ARGV[3], ARGV[10])
index(ARGV[3], now + ttl, KEYS[3] ~= KEYS[4] and KEYS[3], KEYS[5], KEYS[6], ttl)
redis.call('SET', KEYS[10], ARGV[16], 'PX', ARGV[17])
redis.call('PUBLISH', ARGV[8], ARGV[9])
if ARGV[18] ~= '' then redis.call('PUBLISH', ARGV[18], ARGV[9]) end
return {1, ARGV[1], ttl}
`)

// startCooldownScript sets a cooldown and its index by appointment id
// (StartCooldown), as confirmScript does.
//
//	KEYS[1] cooldown (client_limit)  KEYS[2] cooldown index
//	ARGV[1] cooldown value JSON  ARGV[2] cooldown ms
var startCooldownScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[2])
return 1
`)

// keepScript's reply codes; its 1 and 2 are KeepOutcome's Kept and
// Retaken.
const (
	keepTaken   int64 = 0 // another owner's
	keepKept          = int64(Kept)
	keepRetaken       = int64(Retaken)
	keepChanged int64 = 3 // changed since read: retry
)

// releaseBookedScript frees a slot a web booking kept (the appointment was
// cancelled): only while the slot key is still that booking's claim. The
// "release" event is the claim's own hold (bookedClaim less its
// appointmentId, plus "type"): its id — the stream shows its Ref —, client,
// face, slot times and holdExpiresAt as the confirm stored them, as every
// other release event carries the hold's record. The caller knows only the
// slot (a cancel reads the appointment, not the hold), so the event is
// built here, from the value the script deletes.
//
//	KEYS[1] slot
//	ARGV[1] appointmentId  ARGV[2] channel
//
// Returns 1 released (event published), 0 not this booking's claim (nothing changed).
var releaseBookedScript = redis.NewScript(decodeHold + `
local h = dec(redis.call('GET', KEYS[1]))
if not h or h.appointmentId ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
h.appointmentId = nil
h.type = 'release'
redis.call('PUBLISH', ARGV[2], cjson.encode(h))
return 1
`)

// releaseBookedScript's replies.
const (
	bookedNotClaimed = 0 // not this booking's claim: nothing changed
	bookedReleased   = 1
)

// sweepScript announces one hold whose time is up, if its key is gone.
//
//	KEYS[1] slot  KEYS[2] client (KEYS[3] again: in another shard)  KEYS[3] records
//	KEYS[4] expiry  KEYS[5] active
//	ARGV[1] holdId  ARGV[2] now ms  ARGV[3] channel  ARGV[4] "release" event JSON
//
// Returns 1 expired and announced, 2 expired silently (a confirmed IVA hold,
// a record already gone, or the slot key now a newer hold's: the slot is
// not free), 0 still live (its index scores are moved to its real end;
// a key in its last millisecond, PTTL 0, is live until it is gone).
var sweepScript = redis.NewScript(decodeHold + `
local cur = redis.call('GET', KEYS[1])
local h = dec(cur)
if h and h.holdId == ARGV[1] then
  local p = redis.call('PTTL', KEYS[1])
  if p >= 0 then -- 0: its last millisecond, the key still there
    local exp = tonumber(ARGV[2]) + p
    redis.call('ZADD', KEYS[4], exp, ARGV[1])
    redis.call('ZADD', KEYS[5], exp, ARGV[1])
    return 0
  end
end
local r = dec(redis.call('HGET', KEYS[3], ARGV[1]))
if KEYS[2] ~= KEYS[3] then redis.call('ZREM', KEYS[2], ARGV[1]) end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if r and not r.confirmed and not cur then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
  return 1
end
return 2
`)

// sweepScript's replies.
const (
	sweepLive      = 0 // still live: its index scores moved to its real end
	sweepAnnounced = 1 // expired, "release" published
	sweepSilent    = 2 // expired silently
)

// clearCooldownScript deletes a cooldown found through its appointment index.
//
//	KEYS[1] cooldown index  KEYS[2] cooldown key (the index's value)
//	ARGV[1] appointmentId
//
// Returns 1 cleared, 0 none (or the key now belongs to another appointment:
// only the index is deleted).
var clearCooldownScript = redis.NewScript(decodeHold + `
if redis.call('GET', KEYS[1]) ~= KEYS[2] then return 0 end
redis.call('DEL', KEYS[1])
local v = dec(redis.call('GET', KEYS[2]))
if v and v.appointmentId == ARGV[1] then
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
`)

// clearCooldownScript's replies.
const (
	cooldownNone    = 0
	cooldownCleared = 1
)

// The client-shard scripts (split.go): with several shards a client's
// quota index and cooldowns may live in another shard than the resource.

// reserveScript is a claim's first step in the client's shard: the
// cooldown, the prune of expired entries, the exact quota and — when
// there is room — the new hold id added with its expiry (a reservation of
// quota, removed again when the claim in the resource shard refuses).
//
//	KEYS[1] client index  KEYS[2] cooldown (client_limit)
//	ARGV[1] holdId  ARGV[2] ttl ms  ARGV[3] now ms
//	ARGV[4] max holds (<= 0: no quota)  ARGV[5] "1": check the cooldown
//
// Returns {code, value, ms} with claimScript's codes: 1 reserved, -1 quota
// reached (value the count, ms until the earliest entry ends), -2 cooldown
// (ms its remaining TTL, -1 when it has none).
var reserveScript = redis.NewScript(quotaLua + `
local ttl = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if ARGV[5] == '1' then
  local cd = redis.call('PTTL', KEYS[2])
  if cd > 0 or cd == -1 then return {-2, '', cd} end
end
local full = quotaFull(KEYS[1], tonumber(ARGV[4]), now)
if full then return full end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, '', ttl}
`)

// extendScript moves a hold's quota entry to its new expiry (a heartbeat,
// a refreshed or kept hold) in the client's shard: raised, never lowered;
// ARGV[4] "1" also adds an entry that is missing.
//
//	KEYS[1] client index
//	ARGV[1] holdId  ARGV[2] expiry ms  ARGV[3] ttl ms (the index's PX floor)  ARGV[4] add
//
// Returns 1 moved or added, 0 nothing to move.
var extendScript = redis.NewScript(`
local exp = tonumber(ARGV[2])
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not cur and ARGV[4] ~= '1' then return 0 end
if not cur or tonumber(cur) < exp then redis.call('ZADD', KEYS[1], exp, ARGV[1]) end
local ttl = tonumber(ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`)

// delIfScript deletes a key while it holds an expected value: a cooldown
// index in another shard than its cooldown.
//
//	KEYS[1] the key  ARGV[1] the expected value
//
// Returns 1 deleted, 0 not that value (nothing changed).
var delIfScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// clearCooldownValueScript deletes a cooldown while it is appointmentId's
// (ClearCooldown where the index lives in another shard).
//
//	KEYS[1] cooldown key  ARGV[1] appointmentId
//
// Returns clearCooldownScript's replies.
var clearCooldownValueScript = redis.NewScript(decodeHold + `
local v = dec(redis.call('GET', KEYS[1]))
if v and v.appointmentId == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)
