package slotcache

import "github.com/redis/go-redis/v9"

// recordScript records one tier refresh outcome.
//
//	KEYS[1] the tier's health hash   KEYS[2] the location's history list
//	ARGV[1] 1 success / 0 failure   ARGV[2] now, RFC 3339
//	ARGV[3] error text ("" on success)   ARGV[4] history entry JSON
//	ARGV[5] history length kept
//
// Returns the tier's consecutive failures after it.
var recordScript = redis.NewScript(`
local n = 0
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'consecutiveFailures', 0, 'lastError', '', 'lastSuccess', ARGV[2], 'lastAttempt', ARGV[2])
else
  n = redis.call('HINCRBY', KEYS[1], 'consecutiveFailures', 1)
  redis.call('HSET', KEYS[1], 'lastError', ARGV[3], 'lastAttempt', ARGV[2])
end
redis.call('LPUSH', KEYS[2], ARGV[4])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[5]) - 1)
return n
`)

// releaseScript deletes the refresh lease if it still holds this run's
// token (compare-and-delete).
//
//	KEYS[1] lease   ARGV[1] token
//
// Returns 1 if released.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)
