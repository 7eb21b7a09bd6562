package signature

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the replay guard's keys (RedisReplayGuard,
// DefaultReplayPrefix): their part of docs/keyspace.md, which is made from
// them.
func RedisKeys() []keyspace.Key {
	return []keyspace.Key{
		{Pattern: DefaultReplayPrefix + "<signature>", Type: keyspace.String, Owner: "webhooks/signature",
			TTL: "2 × `WEBHOOK_TOLERANCE` (10 min)", What: "a signature seen (`SET NX`): the replay guard"},
	}
}
