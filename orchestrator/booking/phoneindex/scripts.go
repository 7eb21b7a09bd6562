package phoneindex

import "github.com/redis/go-redis/v9"

// takeReads grants up to ARGV[1] GetPatientInformation reads from the
// minute's budget of ARGV[2], shared by every instance.
//
//	KEYS[1] the minute's counter
//	ARGV[1] reads wanted
//	ARGV[2] the per-minute bound
//	ARGV[3] the counter's TTL (ms)
//
// Returns the reads granted (0 when the minute's budget is spent).
var takeReads = redis.NewScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local grant = math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - used)
if grant <= 0 then
  return 0
end
redis.call('INCRBY', KEYS[1], grant)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return grant
`)
