// Package reservation is the IVA face of the hold engine (package holds):
// the cross-session slot reservation of docs/holds.md#the-hold-engine. A session that starts
// booking a slot holds it for a short time, and the slot lists other
// sessions receive leave it out.
//
//	Reserve  before SetAppointment: absent → hold for 90 s; held by the same
//	         session → idempotent success (TTL refreshed, never shortened);
//	         held by another session or a web client → *HeldError
//	         (errors.Is ErrReservedByOther)
//	Confirm  after a successful booking: hold for 300 s, only if this
//	         session holds it (or nobody does any more: then it is taken
//	         again, so the booked slot is not re-offered while caches catch up)
//	Release  after a failed booking: delete, only if this session holds it
//	Adopt    Reserve for a slot a web hold holds for this very booking (the
//	         web face's /book of a Cloud9 slot): the web hold becomes this
//	         session's reservation, the slot never free in between
//	Filter   slot lists: drop the slots others hold; the asking session
//	         still sees its own
//
// # One engine, two faces
//
// Each slot maps to the engine's resource and start: the schedule column
// (chair) GUID is the specialist (as the caller spelled it; the engine's
// slot key ignores its case), the Cloud9 startTime read in the
// location's time zone (Config.Location) is the slot start. Reserve claims
// the engine's canonical slot key, which web holds (/v1/holds) claim too,
// so whichever face asks first wins, atomically; the engine also writes the
// seed's readable SlotReservation key with the seed's value (keys.go).
// Every reservation is an engine hold with Face "iva": Reserve publishes a
// "hold" event on holds:events:<appointment type GUID> (the slot's, or
// Config.AppointmentTypeID), Release a "release", Confirm a "confirm"; an
// abandoned reservation's expiry is published as "release" by the engine's
// sweep, a confirmed one expires silently (the slot is booked). IVA holds
// have no client quota and no cooldown.
//
// # Failing open (principle 5 of docs/reference/README.md)
//
// When Redis is down, reservations must not stop bookings. Filter logs a
// warning and returns its input unchanged, together with an error matching
// ErrUnavailable that the caller may count or ignore. Reserve, Confirm and
// Release return that error (a *contracts.Error with CodeUnavailable): the
// booking service logs it and proceeds as if the slot were reserved.
//
// # Privacy
//
// The value names the holder's session and patient. A *HeldError carries
// only when the hold started and when it ends, so one caller never learns
// who else is booking.
package reservation
