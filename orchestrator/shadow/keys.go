package shadow

// The shadow records, per endpoint under one hash tag (a record's
// transaction touches both keys: Redis Cluster needs them in one slot):
//
//	flowgate:shadow:{<endpoint>}:n       HASH  counters (compared, identical, superset,
//	                                          missing, types, values, dropped, field:<name>)
//	flowgate:shadow:{<endpoint>}:recent  LIST  the last Window comparisons (Result JSON,
//	                                          newest first): paths and classes only
//
// Both expire Retention after the last record.
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
