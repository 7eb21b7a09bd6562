package availability

// Every key of the package shares the hash tag {availability}, so each
// script — an admin change that rewrites the schedule and invalidates the
// timeslots of several appointment types, a booking that records an
// appointment and invalidates its type — touches one Redis Cluster slot.
// After the tag the keys read like the seed's:
//
//	<prefix>{availability}:schedule                       HASH  version, fileHash, doc (the Schedule JSON)
//	<prefix>{availability}:appointments                   HASH  appointmentId → Appointment JSON
//	<prefix>{availability}:appointments:by-end            ZSET  appointmentId scored by its end (Unix ms)
//	<prefix>{availability}:timeslots:<typeId>:<specialistId|pooled>   STRING cached timeslots (TTL)
//	<prefix>{availability}:timeslots-index:<typeId>       SET   the cache keys of one type (invalidation without SCAN)
//	<prefix>{availability}:timeslots-gen:<typeId>         STRING generation, INCR'd by every invalidation; a fill
//	                                                      computed before it is refused (no stale refill)
//
// Ids never contain ':' or braces (checkID), so keys do not collide.
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
