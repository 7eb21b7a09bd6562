package signature

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the replay guard's keys (RedisReplayGuard,
// DefaultReplayPrefix): their part of docs/keyspace.md, which is made from
// them.
func RedisKeys() []keyspace.Key {
	return []keyspace.Key{
		{Pattern: DefaultReplayPrefix + "<signature>", Type: keyspace.String, Owner: "webhooks/signature",
			TTL: "2 × `WEBHOOK_TOLERANCE` (10 min)", What: "a signature seen (`SET NX`): the replay guard of every route; a version-1 ACK's or FAIL's is set by " +
				"the ledger's script where the ledger is one shard on one server ([tasks.md](tasks.md#authentication))"},
	}
}
