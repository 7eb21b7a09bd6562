// Package booking is the Node-RED booking path (docs/booking.md,
// docs/reference/nodered-endpoints.md): createPatient, createAppt (single and
// children[]), getApptSlots, getGroupedApptSlots and queue-status, with the
// Cloud9 writes spaced by a shared limiter, two sync tries, then a durable
// Asynq queue. It declares small interfaces for what it uses (deps.go); the
// sidecar adapts the Cloud9 client, the GCRA limiter, the booking-auth
// tokens, the session cache, the slot reservations and the slot tools.
//
// # createAppt (Service.CreateAppt)
//
//  1. Session-cache auto-injection (§4.4): Sessions.Lookup(patientGUID,
//     uui) fills a missing bookingAuthToken and patientGUID.
//  2. Booking auth (§4.2), Config.AuthMode: a present token must pass the
//     checks (BOOKING_AUTH_MALFORMED / _SIGNATURE_INVALID / _EXPIRED /
//     _GUID_MISMATCH) in every mode; without one, token mode answers
//     BOOKING_AUTH_MISSING, session mode (default) accepts a cached session
//     of the same patient, legacy mode also any well-formed GUID. Fails
//     closed.
//  3. Validation (validator v10): a bookingToken gives startTime and the
//     GUIDs (and wins over raw ones); missing column, view, type, minutes
//     take the settings (the seed's Chair 8 etc. are defaults only, the
//     request is honoured). → VALIDATION_ERROR with missing_fields /
//     invalid_fields.
//  4. Reservation (docs/holds.md#the-hold-engine): Reserve (90 s; same session idempotent);
//     another session's hold → SLOT_RESERVED (offer_alternative_slot).
//     Redis trouble fails open. Extended to 300 s (Confirm) on success
//     and while queued; released on a definite failure.
//  5. SetAppointment through the limiter: a limiter wait that ends within
//     the call budget (the larger of InCallWait, 15 s, and SyncBudget,
//     10 s: a full write window that frees within it is waited for) is waited; a rate-limit answer is retried once
//     after SyncRetryDelay (5 s) if that fits; otherwise the booking is
//     queued and answered at once (§5.4). An uncertain outcome (timeout
//     after sending, dropped connection, any non-Cloud9 error) is queued
//     with CheckFirst; a refusal (SLOT_NOT_AVAILABLE — including the
//     "cannot be scheduled in the specified time slot" text —,
//     PATIENT_NOT_FOUND, INVALID_*, other Cloud9 errors) is answered with
//     its guidance.
//  6. Success → SetPatientComment with the note (a note that cannot be
//     added now is queued as booking:set_patient_comment; a refused note
//     only gives noteAdded:false) → §5.2.
//
// Every outcome is HTTP 200. children[] books each child in order through
// steps 4–6 under one shared sync budget (later children are queued rather
// than wait again); the token is checked once against the primary patient
// and each child must book under it (legacy mode excepted).
//
// # The web face's bookings (Service.BookHeld, held.go)
//
// The web face's /book of a Cloud9-sourced appointment type books through
// the same core: its hold is first adopted as the reservation of the
// session "web-<digest of the holdId>" (reservation.Store.Adopt), then BookHeld runs
// steps 4–5 for that session without auth, session cache or note — Done
// mark, Reserve (its own hold: a refresh), lease, limiter within the sync
// budget, SetAppointment, the durable queue — and answers booked, queued
// (operation id) or a *contracts.Error (409 taken or refused slot, 404
// unknown patient, 400, 503).
//
// # One attempt, two policies (attempt.go)
//
// The protocol of one booking attempt — Done mark, reservation, lease,
// check first after an uncertain outcome, limiter turn, in-flight mark,
// SetAppointment, classification (cloud9's classes), and every side effect
// (Done mark, hold extended or released, slot-cache drop, note, event) — is
// attempt.run, written once. The sync path runs it with syncPolicy
// (appt.go: waits within the budget, retries a rate limit once, queues
// what cannot be done now), the worker with workerPolicy (worker_appt.go:
// defers without spending an attempt, retries with the backoff, only the
// last attempt is final). Redis work of a request is bounded by its
// redisBudget (budget.go).
//
// # No duplicate appointment (Marks)
//
// Each booking has an identity: patient, start time to the minute, column
// (IdentityKey). Only one attempt at a time may work on an identity: it
// claims the identity's lease atomically (SET NX PX, WriteTimeout +
// LeaseMargin, an owner token) and only the owner writes the in-flight
// mark, sends SetAppointment, clears the mark or releases the lease
// (compare-and-delete scripts). Whoever cannot claim it never sends: the
// sync path answers queued (queue_reason in_progress, CheckFirst), a task
// defers (no attempt spent). After an uncertain outcome the lease is kept
// LeaseGrace longer, so a late commit lands before anyone checks. The
// in-flight mark is cleared after an answer that certainly created
// nothing; a Done mark (DoneTTL: Config.MarksDoneTTL, the retry horizon) records the
// appointment GUID after a success.
// The lease holder who finds an in-flight mark (an earlier timeout,
// dropped connection or crash mid-call) or runs a task queued with
// CheckFirst asks GetAppointmentListByPatient first and completes without
// sending if the appointment is there (same start, same column when Cloud9
// gives it, not cancelled). Whoever finds a Done mark answers the booking
// as made without calling Cloud9, which also makes a repeated createAppt
// idempotent — for the same child only: the Done mark and the lease carry
// the childName. A slot booked in the same call (sessionId ‖ uui) for
// another child — another patientGUID, or the parent's with another
// childName — is answered DUPLICATE_SLOT_BLOCKED from the call's slot
// record (callslots.go, the original's sessionSlotBookings;
// docs/reference/nodered-endpoints.md §1.2 Duplicate), as is a slot named twice in one children[] batch; the
// same patient's slot booked for another child in another call is
// answered SLOT_NOT_AVAILABLE, as Cloud9 would refuse it (a task fails
// with SkipRetry). A SLOT_NOT_AVAILABLE answer does not release the reservation
// when another attempt of the same booking made it (Done mark) or may be
// making it (this attempt's lease lapsed). The marks are keyed by identity
// rather than by operation id so that the sync path and a later task (or a
// repeated createAppt, which gets a new operation) see each other. If the
// marks cannot be used the booking is queued, and a task never calls
// SetAppointment without its lease and mark. Before the sync path answers
// from a Done mark it asks GetAppointmentListByPatient whether the
// appointment still exists and is not cancelled (gone → the mark is
// forgotten and the booking made again; Cloud9 not askable within the
// budget → the mark is trusted).
//
// # The async path (Worker)
//
// Task booking:set_appointment (AppointmentTask payload, no secrets):
// TaskID = operationId "op-<ms>-<6 base36>", queue critical, MaxRetry
// AsyncMaxAttempts−1 (10 attempts), Retention 24 h, first run after
// QueueDelay, retries after Config.Backoff (BackoffPolicy: min(300 s,
// 10 s·2^n), n = attempts made: 20 s, 40 s, 80 s, 160 s, 300 s…). A run:
// Done mark → complete; CheckFirst or in-flight mark → list check; limiter
// Allow — not now → asynqrt.Defer(retryAfter), which spends no attempt
// (on the last attempt, where asynq would archive any error, the handler
// waits instead); in-flight mark; SetAppointment. Success → Done mark,
// reservation Confirm (300 s), note, Asynq result {appointmentGUID,
// patientGUID}, metric flowgate_booking_completed_total, and an Events
// publish {event booking_completed, operationId, appointmentGUID,
// patientGUID, childName, startTime, attempts} (RedisEvents on
// flowgate:booking:events, WebhookEvents signed POST, MultiEvents both).
// SLOT_NOT_AVAILABLE, PATIENT_NOT_FOUND, INVALID_* → asynq.SkipRetry; the
// last attempt or a SkipRetry releases the reservation. A final failure is
// reported (final.go): flowgate_booking_failed_total{operation,class}, the
// task's result {errorType, nextStep, failedAt}, and an Events publish
// {event booking_failed, the fields above, patientName and phoneNumber of
// the caller, errorType, reason, failedAt, nextStep}; the runtime's error
// handler writes the durable dead-letter record. booking:set_patient and
// booking:set_patient_comment work the same way (a created patient gets
// its token and session cached, event patient_created; a patient that
// fails for good is reported like a booking).
//
// # queue-status (Worker.Status)
//
// Read from Asynq's inspector over the booking queue: set_appointment and
// set_patient tasks, states pending/scheduled/retry → pending, active →
// processing, completed → completed (kept 24 h), archived → failed; the
// seed's fields plus operationType, result, completedAt, a failed
// operation's errorType, failedAt and nextStep (what the practice should
// do), page / pageSize / totalPages / nextCursor and storageType "redis" (the original's value; the queue is Asynq's, in Redis);
// newest first.
package booking
