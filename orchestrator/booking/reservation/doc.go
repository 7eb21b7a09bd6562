// Package reservation is the cross-session slot reservation of seed 003:
// a session that starts booking a slot holds it in Redis for a short time,
// and the slot lists other sessions receive leave it out.
//
//	Reserve  before SetAppointment: absent → hold for 90 s; held by the same
//	         session → idempotent success (TTL refreshed, never shortened);
//	         held by another → *HeldError (errors.Is ErrReservedByOther)
//	Confirm  after a successful booking: hold for 300 s, only if this
//	         session holds it (or nobody does any more: then it is taken
//	         again, so the booked slot is not re-offered while caches catch up)
//	Release  after a failed booking: delete, only if this session holds it
//	Filter   slot lists: drop the slots other sessions hold; the asking
//	         session still sees its own
//
// Each of Reserve, Confirm and Release is one Lua script on one key
// (scripts.go), so concurrent sessions cannot both win a slot and a session
// can never release or extend another's hold. Filter reads all keys in one
// pipeline of GETs (not MGET: on Redis Cluster the keys lie in different
// hash slots, and go-redis splits a pipeline by slot). Key and value are
// described in keys.go; TTLs are settings with the seed's defaults.
//
// # Failing open (seed 003, Risk 1)
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
