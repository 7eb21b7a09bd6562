// Package availhttp serves the web face's catalogue endpoints
// over availability.Catalog:
//
//	GET    /v1/appointment-types
//	GET    /v1/appointment-types/{id}/timeslots?from=YYYY-MM-DD&days=N&specialistId=&clientId=&includeHeld=true
//
// and the admin endpoints that change the schedule (schedule-file source
// only; each change invalidates per the table of docs/holds.md#availability-appointment-types-and-timeslots), behind the admin
// middleware the sidecar passes (the /monitoring credentials):
//
//	GET    /v1/admin/availability/schedule
//	PUT    /v1/admin/availability/specialists/{specialistId}/weekly-hours      body WeeklyHours
//	PUT    /v1/admin/availability/specialists/{specialistId}/overrides/{date}  body {"hours":[…]}
//	DELETE /v1/admin/availability/specialists/{specialistId}/overrides/{date}
//	DELETE /v1/admin/availability/specialists/{specialistId}
//	PUT    /v1/admin/availability/appointment-types/{id}                        body AppointmentType
//
// Errors use flowgate's envelope: unknown type or specialist 404, a
// malformed date or days out of range 400 naming the field, Redis down 503.
// Holds of other clients are taken out of the timeslots through the
// consumer interface ActiveHolds (the hold engine's Active).
package availhttp
