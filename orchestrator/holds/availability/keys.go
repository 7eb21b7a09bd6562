package availability

import "github.com/flowgate/flowgate/orchestrator/keyspace"

// RedisKeys are the package's keys with the production prefix (none): its
// part of docs/keyspace.md, which is made from them. Every key shares the
// hash tag {availability}, so each script — an admin change that rewrites
// the schedule and invalidates the timeslots of several appointment types,
// a booking that records an appointment and invalidates its type — touches
// one Redis Cluster slot. After the tag the keys read like the original's
// (docs/holds.md). Ids never contain ':' or braces (checkID), so keys do
// not collide.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/holds/availability"
	return []keyspace.Key{
		{Pattern: "{availability}:schedule", Type: keyspace.Hash, Owner: o,
			What: "the schedule", Fields: []string{"version", "fileHash", "doc (the Schedule JSON)"}},
		{Pattern: "{availability}:appointments", Type: keyspace.Hash, Owner: o, TTL: "— (ended ones pruned after 30 days)",
			What: "appointmentId → Appointment JSON"},
		{Pattern: "{availability}:appointments:by-end", Type: keyspace.ZSet, Owner: o, TTL: "same",
			What: "appointmentId → end ms"},
		{Pattern: "{availability}:timeslots:<typeId>:<specialistId|" + PooledScope + ">", Type: keyspace.Hash, Owner: o,
			TTL: "`TIMESLOTS_CACHE_TTL_SECONDS` (300 s)", What: "cached timeslots, one field per date (cachecodec.go)"},
		{Pattern: "{availability}:timeslots-index:<typeId>", Type: keyspace.Set, Owner: o,
			What: "the cache keys of one type (invalidation without SCAN)"},
		{Pattern: "{availability}:timeslots-gen:<typeId>", Type: keyspace.String, Owner: o,
			What: "generation, bumped (`INCR`) by every invalidation; a fill computed before it is refused (no stale refill)"},
	}
}

type keys struct{ base string }

// PooledScope is the cache scope of a type's timeslots over all its
// specialists (the seed's "pooled").
const PooledScope = "pooled"

func newKeys(prefix string) keys { return keys{base: prefix + "{availability}:"} }

func (k keys) schedule() string          { return k.base + "schedule" }
func (k keys) appointments() string      { return k.base + "appointments" }
func (k keys) appointmentsByEnd() string { return k.base + "appointments:by-end" }

// timeslots is the cache key of a type's timeslots for one specialist or
// PooledScope.
func (k keys) timeslots(typeID, scope string) string {
	return k.base + "timeslots:" + typeID + ":" + scope
}
func (k keys) index(typeID string) string { return k.base + "timeslots-index:" + typeID }
func (k keys) gen(typeID string) string   { return k.base + "timeslots-gen:" + typeID }

// invalidation lists the index and generation keys of each type, the
// KEYS tail every invalidating script takes.
func (k keys) invalidation(typeIDs []string) []string {
	out := make([]string, 0, 2*len(typeIDs))
	for _, id := range typeIDs {
		out = append(out, k.index(id), k.gen(id))
	}
	return out
}
