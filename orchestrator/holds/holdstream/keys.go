package holdstream

// Redis keys and channels of the hub (prefix is Config.KeyPrefix, empty in
// production):
//
//	{prefix}holds:events:{appointmentTypeId}      channel: the engine's hold events (the engine publishes)
//	{prefix}holdstream:control                    channel: stream opens and cancels, read by every hub
//	{prefix}holdstream:{<clientId>}:seq           string: the client's stream counter (TTL: MaxLease + 1 min)
//
// The counter key carries the clientId as its hash tag, so the open script
// touches one slot (Cluster-safe).

func eventChannel(prefix, appointmentTypeID string) string {
	return prefix + "holds:events:" + appointmentTypeID
}

func controlChannel(prefix string) string { return prefix + "holdstream:control" }

func seqKey(prefix, clientID string) string { return prefix + "holdstream:{" + clientID + "}:seq" }
