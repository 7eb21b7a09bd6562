// Package holdshttp is the web face of the hold engine (seed
// 002): the /v1 endpoints that need the engine.
//
//	POST   /v1/holds                          {appointmentTypeId, slotStartDate, clientId, specialistId?}
//	                                          → 201 {holdId, specialistId, slotStartDate, slotEndDate, holdExpiresAt}
//	PATCH  /v1/holds                          {holdId, clientId} → 200 {ok, holdId, holdExpiresAt}  (heartbeat)
//	DELETE /v1/holds/{holdId}?clientId=       → 200 {released}                                    (idempotent)
//	POST   /v1/appointment-types/{id}/book    {holdId, clientId} → 201 {appointment}
//	DELETE /v1/appointments/{appointmentId}   → 200 {appointment, cooldownCleared}                (cancel)
//
// Statuses: taken slot or no free specialist 409 conflict; client quota or
// cooldown 429 rate_limited with Retry-After and details.retryAfterSeconds;
// bad input 400 invalid with details.field; unknown appointment type,
// specialist, hold or appointment 404; Redis down 503 unavailable. Every
// refusal is decided before anything is written (the claim script refuses
// without writing), so a refused request changes nothing in Redis.
//
// # Booking order
//
// book (1) heartbeats the hold: it must be live and the client's, and is
// then good for another hold TTL; (2) records the appointment in the
// Catalog (which invalidates the type's timeslot cache); (3) Confirm: one
// script deletes the hold, publishes "confirm" and sets the cooldown. If
// (2) fails the hold is kept (the client may retry) and nothing is booked;
// if (3) fails after (2) (the hold vanished, or Redis failed) the recorded
// appointment is cancelled again, so the cooldown is only ever set after a
// booking that stands.
//
// The appointment types, the grid and the free specialists come from a
// Catalog (availability's, through the consumer-side interface here).
package holdshttp
