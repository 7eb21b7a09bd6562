package reservation

import "github.com/redis/go-redis/v9"

// The scripts share the holder test: the value is JSON whose sessionId is
// ARGV[1]. A value that is not such JSON is someone else's.
const holderOf = `
local function holder(v)
  local ok, t = pcall(cjson.decode, v)
  if ok and type(t) == 'table' and type(t.sessionId) == 'string' then return t.sessionId end
  return nil
end
`

// reserveScript takes a slot.
//
//	KEYS[1] reservation key
//	ARGV[1] sessionId   ARGV[2] value JSON   ARGV[3] TTL ms
//
// Returns {code, value, pttl}: code 1 reserved now (value = ARGV[2]);
// 2 already held by this session (value kept, TTL raised to ARGV[3] if
// lower); 0 held by another session (nothing changed).
var reserveScript = redis.NewScript(holderOf + `
local cur = redis.call('GET', KEYS[1])
local ttl = tonumber(ARGV[3])
if not cur then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
  return {1, ARGV[2], ttl}
end
local pttl = redis.call('PTTL', KEYS[1])
if holder(cur) == ARGV[1] then
  if pttl < ttl then -- also gives a TTL-less value one
    redis.call('PEXPIRE', KEYS[1], ttl)
    pttl = ttl
  end
  return {2, cur, pttl}
end
return {0, cur, pttl}
`)

// confirmScript keeps a booked slot out of other sessions' lists.
//
//	KEYS[1] reservation key
//	ARGV[1] sessionId   ARGV[2] value JSON   ARGV[3] TTL ms
//
// Returns {code, value, pttl}: 1 held by this session, TTL set to ARGV[3];
// 2 nobody held it (expired): taken with ARGV[2] for ARGV[3]; 0 held by
// another session (nothing changed).
var confirmScript = redis.NewScript(holderOf + `
local cur = redis.call('GET', KEYS[1])
local ttl = tonumber(ARGV[3])
if not cur then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
  return {2, ARGV[2], ttl}
end
if holder(cur) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, cur, ttl}
end
return {0, cur, redis.call('PTTL', KEYS[1])}
`)

// releaseScript is compare-and-delete.
//
//	KEYS[1] reservation key
//	ARGV[1] sessionId
//
// Returns 1 deleted, 0 nothing held, -1 held by another session (kept).
var releaseScript = redis.NewScript(holderOf + `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if holder(cur) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return -1
`)
