package shadow

import "slices"

// Endpoint is one endpoint of the Node-RED kit (flows/node-red/endpoints.json's
// name) as the shadow mode knows it.
type Endpoint struct {
	Name string
	// Group is the switch group: endpoints that share state (sessions,
	// bookingAuthTokens, bookingTokens) are switched and judged together.
	// Empty: the endpoint switches alone.
	Group string
	// Shadowed: flowgate can answer a mirror of it dry. The operation
	// endpoints (redisSet, cache/…, /test/…) act on Redis itself and are
	// never shadowed; the kit's admin route refuses "shadow" for them.
	Shadowed bool
}

// GroupBooking is the booking group: createPatient's session and
// bookingAuthToken are what createAppt books with, getApptSlots' and
// getGroupedApptSlots' bookingTokens are what it books, and queue-status
// shows the queue of whoever queued the booking. Half of it on each side
// would refuse the other half's tokens (BOOKING_AUTH_MISSING).
const GroupBooking = "booking"

// Endpoints is the kit's endpoint list (one row per name), the one table
// the report, the metrics' endpoint label and the mirror's check walk. A
// test in flows/ holds it equal to endpoints.json (names and groups).
var Endpoints = []Endpoint{
	{Name: "queue-status", Group: GroupBooking, Shadowed: true},
	{Name: "getApptSlots", Group: GroupBooking, Shadowed: true},
	{Name: "getGroupedApptSlots", Group: GroupBooking, Shadowed: true},
	{Name: "getLocation", Shadowed: true},
	{Name: "getPatient", Shadowed: true},
	{Name: "getPatientByFilter", Shadowed: true},
	{Name: "getPatientAppts", Shadowed: true},
	{Name: "checkOperationStatus", Shadowed: true},
	{Name: "createPatient", Group: GroupBooking, Shadowed: true},
	{Name: "createAppt", Group: GroupBooking, Shadowed: true},
	{Name: "bookConsultation", Shadowed: true},
	{Name: "confirmAppt", Shadowed: true},
	{Name: "cancelAppt", Shadowed: true},
	{Name: "editInsurance", Shadowed: true},
	{Name: "redisGet"}, {Name: "redisSet"}, {Name: "redisDelete"},
	{Name: "cache-health"}, {Name: "cache/refresh"}, {Name: "cache"}, {Name: "cache/trigger"},
	{Name: "test/slot-cache/prefetch"}, {Name: "test/slot-cache/status"}, {Name: "test/slot-cache/query"},
	{Name: "test/slot-cache/clear"}, {Name: "test/redis-slot-cache/trigger"}, {Name: "test/redis-slot-cache/status"},
	{Name: "test/redis-slot-cache/clear"},
}

// Lookup finds an endpoint of the table by name.
func Lookup(name string) (Endpoint, bool) {
	i := slices.IndexFunc(Endpoints, func(e Endpoint) bool { return e.Name == name })
	if i < 0 {
		return Endpoint{}, false
	}
	return Endpoints[i], true
}

// Members is a group's endpoints, in table order.
func Members(group string) []string {
	var out []string
	for _, e := range Endpoints {
		if group != "" && e.Group == group {
			out = append(out, e.Name)
		}
	}
	return out
}
