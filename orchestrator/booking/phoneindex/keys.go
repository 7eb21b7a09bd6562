package phoneindex

import "strconv"

// Redis keys. GUIDs are unique inside one Cloud9 client database, so one
// hash holds every location's patients. The {phones} hash tag keeps the
// keys in one Cluster slot.
//
//	<prefix>{phones}:entries       hash: patient GUID → JSON entry (record, digits, fetchedAt); PX Keep
//	<prefix>{phones}:reads:<min>   string: GetPatientInformation sent in that minute (unix minutes); PX 2 min
type keys struct {
	entries, prefix string
}

func newKeys(prefix string) keys {
	tag := prefix + "{phones}"
	return keys{entries: tag + ":entries", prefix: tag}
}

func (k keys) reads(minute int64) string { return k.prefix + ":reads:" + strconv.FormatInt(minute, 10) }
