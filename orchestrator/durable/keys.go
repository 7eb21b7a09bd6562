package durable

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the barrier's markers: their part of docs/keyspace.md,
// which is made from them.
func RedisKeys() []keyspace.Key {
	return []keyspace.Key{
		{Pattern: "flowgate:durable:{<n>}", Type: keyspace.String, Owner: "orchestrator/durable",
			What: "the durability barrier's marker (`INCR`, then `WAIT` on the same connection), one per master, `n` " +
				"chosen so the key's slot is that master's (on one server or behind Sentinel, `n` = 0); written only " +
				"with `REDIS_MIN_REPLICAS_ACK` > 0, never read"},
	}
}
