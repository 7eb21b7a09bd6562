-- The prelude of the hold scripts: every script of this directory runs
-- after it (scripts.go). Every script declares all the keys it touches;
-- with the hash tag (keys.go) they lie in one slot, so each runs unchanged
-- on Redis Cluster. Times are unix milliseconds from the engine's clock
-- (ARGV "now"), TTLs milliseconds. A hold's owner is (clientId, face) read
-- from the JSON on the canonical slot key.
--
-- With several shards (keys.go) every key of these scripts is in the
-- hold's resource shard. A client index that lives in another shard is
-- passed as a placeholder (the records key again), which the scripts
-- recognise (client index == records) and leave alone; the caller then
-- updates the index in the client's shard with the client-shard scripts
-- (reserve, extend, start_cooldown, del_if, clear_cooldown_value;
-- split.go).

-- dec is the table of a hold JSON, or nil.
local function dec(v)
  if not v then return nil end
  local ok, t = pcall(cjson.decode, v)
  if ok and type(t) == 'table' then return t end
  return nil
end

-- raise raises the TTL of key k to ttl ms (never lowers it; a key without
-- a TTL keeps none).
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
-- nil otherwise. keys are claim.lua's: 1 slot, 2 face key, 3 client index
-- (or 4 again: in another shard), 4 records, 5 expiry, 6 active.
local function ownHold(keys, h, pttl, client, face, typeId, refresh, ttl, now)
  if not (h and h.clientId == client and h.face == face and h.appointmentTypeId == typeId and not h.appointmentId) then
    return nil
  end
  local fp = redis.call('PTTL', keys[2])
  if fp >= 0 and fp < pttl then pttl = fp end
  if refresh == '1' and pttl < ttl then
    raise(keys[1], ttl)
    raise(keys[2], ttl)
    index(h.holdId, now + ttl, keys[3] ~= keys[4] and keys[3], keys[5], keys[6], ttl)
    pttl = ttl
  end
  return pttl
end

-- quotaFull drops the client index idx's expired entries and, when max > 0
-- and the index holds max live holds, answers the quota reply {-1, count,
-- ms until the earliest ends}; nil when there is room. claim.lua and
-- reserve.lua share it.
local function quotaFull(idx, max, now)
  if max <= 0 then return nil end
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
  local n = redis.call('ZCARD', idx)
  if n < max then return nil end
  local first = redis.call('ZRANGE', idx, 0, 0, 'WITHSCORES')
  return {-1, tostring(n), tonumber(first[2]) - now}
end
