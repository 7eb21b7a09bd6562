// Package availability computes the bookable timeslots of the web face of
// the hold engine (docs/holds.md#availability-appointment-types-and-timeslots): per appointment type and
// specialist, from weekly hours, date overrides and existing appointments
// (duration and buffer), in the location's time zone and DST-correct.
//
// Two sources stand behind one small interface (Source): a schedule file
// (ScheduleSource: appointment types, specialists with priority, weekly
// hours and overrides, kept in Redis once loaded so the admin endpoints can
// change them for every instance; with a ScheduleSeed, the first read that
// finds it gone from Redis stores the file's again, once across instances)
// and Cloud9 (Cloud9Source: the open slots of GetOnlineReservations through
// the slot cache, chairs as specialists).
// Appointments booked through /v1 of a schedule-file type are kept in
// Redis (Store); those of a Cloud9 type are booked in Cloud9 (the web
// face's Booker), whose open list then leaves them out, and a start on the
// type's weekly grid that Cloud9 no longer lists open is answered as taken
// (ErrSlotTaken, 409) rather than off the grid.
//
// Catalog is what the HTTP layer (availhttp) and the hold engine's web face
// use: the appointment types, the timeslots of a type (cached under
// timeslots:{appointmentTypeId}:{specialistId|pooled} with an index per
// type, invalidated exactly as the table of docs/holds.md says), the candidates of a
// slot, and booking records.
//
// The slot arithmetic (grid.go) is pure and table-tested; every Redis
// state change is one Lua script (scripts.go) on keys that share the hash
// tag {availability} (keys.go), so it works on Redis Cluster.
package availability
