package phoneindex

// Redis keys of one location's index. The {…} hash tag keeps them in one
// Cluster slot, so the MULTI of a refresh and the lock script are
// Cluster-safe.
//
//	<prefix>{<location>}:entries  hash: patient GUID → JSON entry (record, digits)
//	<prefix>{<location>}:meta     hash: refreshedAt, lastComplete (unix ms), total, indexed, failed, partial
//	<prefix>{<location>}:lock     string: the refreshing instance's token (PX LockTTL)
type keys struct {
	entries, meta, lock string
}

func newKeys(prefix, location string) keys {
	tag := prefix + "{" + location + "}"
	return keys{entries: tag + ":entries", meta: tag + ":meta", lock: tag + ":lock"}
}

// Meta hash fields.
const (
	fieldRefreshedAt  = "refreshedAt"
	fieldLastComplete = "lastComplete"
	fieldTotal        = "total"
	fieldIndexed      = "indexed"
	fieldFailed       = "failed"
	fieldPartial      = "partial"
)
