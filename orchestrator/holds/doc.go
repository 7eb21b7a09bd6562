// Package holds is flowgate's one exclusive hold engine (docs/holds.md).
// A hold is an exclusive claim on (resource, slot start); the
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
// carrying one hash tag on Redis Cluster — or, with Config.Shards > 1,
// spread over that many tags, the slot claim still one script and the
// quota and cooldown kept exact across two shards by the order of the
// split steps (split.go; see Several shards below). Each change PUBLISHes
// an Event on EventChannel(appointmentTypeId) ("hold", "heartbeat",
// "release", "confirm"); expired holds are announced as "release" by
// Sweep, run once per tick by the scheduler.
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
//
// # Several shards
//
// With several shards (Config.Shards > 1, keys.go) a hold's resource shard
// — slot key, face keys, record, indexes — may differ from its client's
// shard — the quota index client:<clientId>:holds and the cooldown — and
// from its appointment's — the cooldown's index. The slot claim stays one
// script in the resource shard, so no slot is ever held twice. Where two
// shards change, the order of the split steps (split.go) keeps every count
// an upper bound, so a crash (or a lost reply) between the two steps never
// lets a client past its quota or its cooldown:
//
//   - Claim: (1) lua/reserve.lua in the client's shard — cooldown, prune,
//     exact quota, and the new hold id added with its expiry; (2)
//     lua/claim.lua in the resource shard. A definite refusal of (2) (taken,
//     or held already) removes the entry again; a crash or an error between
//     leaves it to be pruned at its expiry, at most the hold's TTL later:
//     the quota counts a hold that never was, never misses one.
//   - Heartbeat: the quota entry's expiry is raised first (lua/extend.lua),
//     then the hold; a hold that turns out gone has its entry removed. A
//     crash between leaves the entry at most one TTL too long.
//   - Release, Confirm, the expiry sweep: the resource shard first, then
//     the entry goes (ZREM); a crash between leaves it until its expiry.
//   - Cooldown (Confirm, StartCooldown): the index by appointment id first,
//     then the cooldown, both before the hold is confirmed: a crash leaves a
//     cooldown of a booking that was recorded (the web face confirms after
//     recording it, and undoes both through ClearCooldown when the confirm
//     fails), never a booking without its cooldown. ClearCooldown deletes
//     the cooldown first, then the index: a crash leaves an index whose
//     cooldown is gone, which it then ignores.
//   - Adopt, Keep (no quota is checked): the new entry is added before the
//     resource script and removed on its refusal; the web hold's entry goes
//     after it.
package holds
