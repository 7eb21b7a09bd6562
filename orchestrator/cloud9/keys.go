package cloud9

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the limiters' keys (KeyPrefix): their part of
// docs/keyspace.md, which is made from them.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/cloud9"
	return []keyspace.Key{
		{Pattern: KeyPrefix + "{<procedure>}:window", Type: keyspace.ZSet, Owner: o, TTL: "the window + 1 s",
			What: "the `window` write limiter's log of one procedure"},
		{Pattern: "rate:" + KeyPrefix + "{<procedure>}", Type: keyspace.String, Owner: o, TTL: "set by redis_rate",
			What: "the `spacing` write limiter (redis_rate's GCRA), and the slot cache's GetOnlineReservations read limiter"},
	}
}
