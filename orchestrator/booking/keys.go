package booking

import (
	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the marks' keys (RedisMarks, default prefix) and the
// booking channels: their part of docs/keyspace.md, which is made from
// them. The hash tag keeps the keys of one booking in one Cluster slot, so
// the scripts touch them atomically.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/booking"
	return []keyspace.Key{
		{Pattern: "flowgate:booking:{<identity>}:lease", Type: keyspace.String, Owner: o, TTL: "the claim's",
			What: "`<owner>|<childName>` (`marks.go`): one attempt of a booking at a time; identity = patient | " +
				"start | column, a call's slot record (`call:<call>|<start>|<column>`, 1 h) or a consultation " +
				"patient (`consult-patient|…`)"},
		{Pattern: "flowgate:booking:{<identity>}:inflight", Type: keyspace.String, Owner: o, TTL: "24 h",
			What: "a write was sent and its outcome is unknown: check Cloud9 before sending again"},
		{Pattern: "flowgate:booking:{<identity>}:done", Type: keyspace.String, Owner: o, TTL: "74 min (the retry horizon, ≥ 1 h)",
			What: "the completed booking (or patient): JSON DoneRecord (a value that is not JSON is a bare " +
				"appointment GUID, still read: [CHANGELOG.md](../CHANGELOG.md)); identity `consult-refused|<operationId>|<child>`: " +
				"a consultation task's child Cloud9 refused for good (`refused`), which its later runs skip"},
		{Pattern: contracts.BookingEventsChannel, Type: keyspace.Channel, Owner: o,
			What: "`booking_completed`, `patient_created`, `booking_failed`"},
		{Pattern: contracts.SlotChangesChannel, Type: keyspace.Channel, Owner: o,
			What: "`slot_released` after cancelAppt"},
	}
}
