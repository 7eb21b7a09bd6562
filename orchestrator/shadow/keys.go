package shadow

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the shadow records: its part of docs/keyspace.md, which is
// made from them. Both keys of an endpoint share one hash tag (a record's
// transaction touches both: Redis Cluster needs them in one slot).
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/shadow"
	return []keyspace.Key{
		{Pattern: countsKey("<endpoint>"), Type: keyspace.Hash, Owner: o,
			TTL: "`SHADOW_RETENTION` after the endpoint's last comparison", What: "counters",
			Fields: []string{cCompared, cIdentical, cSuperset, cMissing, cTypes, cValues, cDropped, "`" + cField + "<name>`"}},
		{Pattern: recentKey("<endpoint>"), Type: keyspace.List, Owner: o, TTL: "same",
			What: "the last `SHADOW_READY_WINDOW` comparisons, newest first (Result JSON: statuses, latencies, ≤ 8 " +
				"missing paths, ≤ 8 type mismatches, ≤ 8 field classes): paths and classes only"},
	}
}

const keyPrefix = "flowgate:shadow:"

func countsKey(endpoint string) string { return keyPrefix + "{" + endpoint + "}:n" }

func recentKey(endpoint string) string { return keyPrefix + "{" + endpoint + "}:recent" }

// Counter fields of the counts hash.
const (
	cCompared  = "compared"
	cIdentical = "identical"
	cSuperset  = "superset"
	cMissing   = "missing"
	cTypes     = "types"
	cValues    = "values"
	cDropped   = "dropped"
	cField     = "field:"
)
