// Package holds is flowgate's one exclusive hold engine (seeds
// 002 and 003). A hold is an exclusive claim on (resource, slot start); the
// resource is the specialist — for Cloud9 the schedule column (chair). Two
// faces use it:
//
//   - the web face (/v1/holds, package holdshttp): 30 s holds extended by
//     heartbeat, a per-client quota, a per-appointment-type cooldown after a
//     booking, priority-based specialist assignment (Order);
//   - the IVA face (package booking/reservation): createAppt's 90 s slot
//     reservations, kept 300 s after a booking, released on a failure.
//
// Both claim the same canonical key holds:slot:<specialist>:<start>, so a
// slot one face holds is refused to the other, atomically, whoever asks
// first. Each face also keeps its own readable key (hold:… or
// SlotReservation:…). Every state change — Claim, Heartbeat, Release,
// Confirm, Keep, Adopt, the expiry sweep, ClearCooldown — is one Lua script
// (a file of lua/, listed in scripts.go) over the keys in keys.go, all
// carrying one hash tag on Redis Cluster — or, with Config.Shards > 1, spread over that many tags, the
// slot claim still one script and the quota and cooldown kept exact across
// two shards by the order of split.go. Each change PUBLISHes an Event on EventChannel(appointmentTypeId)
// ("hold", "heartbeat", "release", "confirm"); expired holds are announced
// as "release" by Sweep, run once per tick by the scheduler.
//
// Adopt hands a live web hold over to the IVA face without freeing the
// slot in between: the web face's /book of a slot booked in Cloud9 makes
// its hold the booking core's reservation that way (see holdshttp).
//
// Booking (book.go) holds the rules of booking a web hold, which the web
// face's /book calls: the hold heartbeated first (live, the client's, of
// the type booked), an External type booked through a Booker (the
// booking core, package booking/webbook) with a retry resuming the earlier
// attempt, and the type's cooldown set under the id a cancel finds.
//
// Errors are *contracts.Error or carry a Code: ErrSlotTaken / ErrNoCandidates
// / ErrNotOwner → 409, *QuotaError / *CooldownError → 429, ErrHoldNotFound →
// 404, ErrInvalid → 400, ErrUnavailable (Redis failed) → 503.
package holds
