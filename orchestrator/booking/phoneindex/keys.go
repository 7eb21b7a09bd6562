package phoneindex

import (
	"strconv"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the index's keys with the production prefix
// "flowgate:phoneidx:": its part of docs/keyspace.md, which is made from
// them. GUIDs are unique inside one Cloud9 client database, so one hash
// holds every location's patients. The {phones} hash tag keeps the keys in
// one Cluster slot.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/booking/phoneindex"
	return []keyspace.Key{
		{Pattern: "flowgate:phoneidx:{phones}:entries", Type: keyspace.Hash, Owner: o,
			TTL:  "24 h after the last search that read a record (`Keep`)",
			What: "patient GUID → JSON entry (record, digits, fetchedAt), every location of the client"},
		{Pattern: "flowgate:phoneidx:{phones}:reads:<MINUTE>", Type: keyspace.String, Owner: o, TTL: "2 min",
			What: "GetPatientInformation the phone searches sent in that minute (Unix minutes; " +
				"`PHONE_SEARCH_READS_PER_MINUTE`)"},
	}
}

type keys struct {
	entries, prefix string
}

func newKeys(prefix string) keys {
	tag := prefix + "{phones}"
	return keys{entries: tag + ":entries", prefix: tag}
}

func (k keys) reads(minute int64) string { return k.prefix + ":reads:" + strconv.FormatInt(minute, 10) }
