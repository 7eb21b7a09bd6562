package holdstream

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the hub's key and channel with the production prefix
// (Config.KeyPrefix, empty): its part of docs/keyspace.md, which is made from
// them. It reads the engine's hold events too (holds.RedisKeys). The
// counter key carries the clientId as its hash tag, so the open script
// touches one slot (Cluster-safe).
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/holds/holdstream"
	return []keyspace.Key{
		{Pattern: seqKey("", "<clientId>"), Type: keyspace.String, Owner: o, TTL: "`HOLDS_STREAM_LEASE_MAX` + 1 min",
			What: "the client's stream counter: one stream per clientId across instances"},
		{Pattern: controlChannel(""), Type: keyspace.Channel, Owner: o,
			What: "stream opens and cancels (a cancel names the stream's `streamToken`), read by every instance"},
	}
}

func eventChannel(prefix, appointmentTypeID string) string {
	return prefix + "holds:events:" + appointmentTypeID
}

func controlChannel(prefix string) string { return prefix + "holdstream:control" }

func seqKey(prefix, clientID string) string { return prefix + "holdstream:{" + clientID + "}:seq" }
