// Package holdshttp is the web face of the hold engine (seed
// 002): the /v1 endpoints that need the engine.
//
//	POST   /v1/holds                          {appointmentTypeId, slotStartDate, clientId, specialistId?}
//	                                          → 201 {holdId, holdRef, specialistId, slotStartDate, slotEndDate, holdExpiresAt}
//	PATCH  /v1/holds                          {holdId, clientId} → 200 {ok:true, holdId, holdExpiresAt}  (heartbeat)
//	                                          no live web hold of this client: 200 {ok:false} (docs/holds.md)
//	DELETE /v1/holds/{holdId}?clientId=       → 200 {released}                                    (idempotent)
//	POST   /v1/appointment-types/{id}/book    {holdId, clientId, patientGUID?} → 201 {appointment}
//	                                          (a Cloud9-sourced type: 202 {appointment, operation, statusEndpoint} when queued)
//	DELETE /v1/appointments/{appointmentId}   → 200 {appointment, cooldownCleared}                (cancel)
//
// # Who may act on a hold
//
// The holdId answered by POST /v1/holds is the hold's bearer secret (128
// random bits, holds.Ref): it is answered to the client that made the hold
// and nowhere else — the live stream shows holds.Ref(holdId) as an event's
// holdId and no clientId —, and with the clientId it is the credential of
// PATCH, DELETE and /book. A clientId alone proves nothing: a POST for a
// slot the clientId already holds is 409 slot_taken (the existing hold's id
// is not answered again). These routes act on web holds only: a holdId of
// the IVA face (a createAppt reservation, session id as client) is no
// web hold ({ok:false} / 409). The appointment id of a /v1 booking is derived
// from the hold id (Config.AppointmentID; default the hold id itself), so
// it is as secret, and it is the credential of DELETE /v1/appointments.
//
// Statuses: taken slot — held by someone else, booked (for the Cloud9
// source: a start on the type's grid that Cloud9 no longer lists open) —
// or no free specialist 409 conflict with details.reason "slot_taken";
// client quota or cooldown 429 rate_limited with Retry-After and
// details.retryAfterSeconds; bad input 400 invalid with details.field;
// unknown appointment type, specialist or appointment 404 (a heartbeat of
// a hold that is gone, or never was this client's, answers 200
// {ok:false}, docs/holds.md#the-web-face-v1holds); /book of
// a Cloud9-sourced type without patientGUID 422 PATIENT_REQUIRED; Redis
// down 503 unavailable. Every refusal is decided before anything is
// written (the claim script refuses without writing), so a refused request
// changes nothing in Redis.
//
// # Booking in Cloud9
//
// An appointment type whose catalogue says External (the Cloud9 source:
// Cloud9 is the practice's system of record) is booked there, through the
// booking core of the IVA's createAppt (Config.Booker; package webbook's
// booker over booking.BookHeld in the sidecar), not recorded in the
// Catalog. The rules are holds.Booking's (BookExternal); /book decodes,
// calls it and encodes its answer:
//
//   - Without patientGUID: 422 PATIENT_REQUIRED, details.field patientGUID,
//     before anything else — the hold is kept (retry with the patient).
//   - The hold is heartbeated (live and the client's, else 409), then the
//     booker takes it over as the booking core's reservation (holds'
//     Adopt: the web hold becomes the IVA reservation of a session derived
//     one-way from the hold id ("web-…") in one script, the slot never free in between) and
//     runs the core: the identity's Done mark and lease (patient, start,
//     column: one SetAppointment per booking), the shared Cloud9 write
//     limiter within the sync budget, and the durable Asynq queue when the
//     budget runs out or Cloud9's answer is uncertain (the reservation is
//     kept while the task waits).
//   - Made in Cloud9: 201 {appointment} with status "booked",
//     cloud9AppointmentGUID and patientGUID. Queued: 202 {appointment
//     (status "queued"), operation (queue-status' shape: id, status
//     "pending", attempts…), statusEndpoint} — follow it with the
//     operation status endpoint or queue-status. The type's cooldown is
//     set either way, under the Cloud9 appointment GUID (cancelAppt clears
//     it) or the operation id.
//   - Refused: 409 slot_taken (held by another, or Cloud9 says the slot is
//     not available — the reservation is released), 404 patientGUID
//     unknown to Cloud9, 503 Cloud9 failed and nothing was queued;
//     details.errorType is createAppt's error_type.
//   - Retried with the same hold: the hold is gone (taken over), so the
//     booker finds the takeover's record (kept an hour) and runs the core
//     again for the same booking, which answers from its Done mark (201,
//     the same appointment, no second SetAppointment), or books it now if
//     it was queued (the queued task then finds it made), or is answered
//     queued while the first attempt still runs. A retry naming another
//     patient is refused (409).
//
// Such a booking is cancelled in Cloud9 (cancelAppt); DELETE
// /v1/appointments answers 404 for it (nothing is recorded here).
//
// # Booking order (locally scheduled types)
//
// book (1) heartbeats the hold (holds.Booking.LiveHold): it must be live,
// the client's and of the type booked, and is then good for another hold
// TTL; (2) records the appointment in the
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
