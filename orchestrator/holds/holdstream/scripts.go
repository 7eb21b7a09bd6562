package holdstream

import "github.com/redis/go-redis/v9"

// openScript numbers a new stream of a client and announces it, in one
// step, so every hub agrees which stream of the client is the newest.
//
//	KEYS[1] seqKey(clientId)
//	ARGV[1] counter TTL in ms (outlives any stream: MaxLease + 1 min)
//	ARGV[2] controlChannel
//	ARGV[3] clientId
//	ARGV[4] connectionId
//
// Returns the stream's number; publishes {"op":"open","clientId","seq","connectionId"}.
var openScript = redis.NewScript(`
local seq = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], cjson.encode({op = 'open', clientId = ARGV[3], seq = seq, connectionId = ARGV[4]}))
return seq
`)
