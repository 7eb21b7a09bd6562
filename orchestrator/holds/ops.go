package holds

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Heartbeat extends clientID's live web hold holdID by Config.HoldTTL —
// the slot key, the face key and every index in one script — and publishes
// "heartbeat". It answers false (nothing changed) when the hold has expired,
// never existed, is another client's or is not a web hold (the IVA face
// keeps its reservations with Claim's Refresh and Keep; its session ids are
// no web client's).
func (e *Engine) Heartbeat(ctx context.Context, clientID, holdID string) (Hold, bool, error) {
	const op = "holds.Heartbeat"
	if !validID(clientID) || !validID(holdID) {
		return Hold{}, false, invalid(op, "clientId and holdId are required")
	}
	r, found, err := e.loadRecord(ctx, op, holdID)
	if err != nil || !found || !r.ownedBy(FaceWeb, clientID) {
		return Hold{}, false, err
	}
	now := e.cfg.Now()
	ttl := e.cfg.HoldTTL
	h := r.Hold
	h.HoldExpiresAt = now.Add(ttl).UTC()
	r.Hold = h
	faceValue := ""
	if h.Face == FaceWeb {
		faceValue = mustJSON(h)
	}
	keys, split := e.keysOf(r)
	if split { // split.go: the quota entry first, so it never ends before the hold
		if err := e.extend(ctx, clientID, holdID, h.HoldExpiresAt, ttl, false); err != nil {
			return Hold{}, false, unavailable(op, err)
		}
	}
	n, err := lua.heartbeat.Run(ctx, e.hot, keys, holdID, clientID, ms(ttl), now.UnixMilli(),
		mustJSON(h), faceValue, mustJSON(r), e.channel(h.AppointmentTypeID), event(EventHeartbeat, h)).Int()
	if err != nil {
		return Hold{}, false, unavailable(op, err)
	}
	if split && n != heartbeatExtended { // the hold is gone: so is its place in the quota
		e.unindex(ctx, clientID, holdID)
	}
	return h, n == heartbeatExtended, nil
}

// Release ends clientID's web hold holdID and publishes "release".
// Idempotent: true only for the call that released it; an unknown,
// expired-and-swept or already released hold gives false, nil. Another
// client's hold, or a hold of another face, is left alone (false,
// ErrNotOwner).
func (e *Engine) Release(ctx context.Context, clientID, holdID string) (bool, error) {
	return e.ReleaseAs(ctx, FaceWeb, clientID, holdID)
}

// ReleaseAs is Release for the hold's owner (face, clientID): the IVA face
// releases its reservations with FaceIVA and the session id.
func (e *Engine) ReleaseAs(ctx context.Context, face, clientID, holdID string) (bool, error) {
	const op = "holds.Release"
	if face == "" || !validID(clientID) || !validID(holdID) {
		return false, invalid(op, "face, clientId and holdId are required")
	}
	return e.release(ctx, op, face, clientID, holdID)
}

// release runs lua/release.lua for holdID's owner (face, clientID); both ""
// release whoever holds it (ReleaseSlot).
func (e *Engine) release(ctx context.Context, op, face, clientID, holdID string) (bool, error) {
	r, found, err := e.loadRecord(ctx, op, holdID)
	if err != nil || !found {
		return false, err
	}
	if face != "" && r.Hold.Face != face { // a hold's face never changes: checked before the script
		return false, coded(contracts.CodeConflict, op, ErrNotOwner)
	}
	keys, split := e.keysOf(r)
	n, err := lua.release.Run(ctx, e.hot, keys, holdID, clientID,
		e.channel(r.Hold.AppointmentTypeID), event(EventRelease, r.Hold)).Int()
	switch {
	case err != nil:
		return false, unavailable(op, err)
	case n == releaseForeign:
		return false, coded(contracts.CodeConflict, op, ErrNotOwner)
	}
	if split { // split.go: the hold first, then its place in the quota
		e.unindex(ctx, r.Hold.ClientID, holdID)
	}
	return n == releaseReleased, nil
}

// ReleaseSlot releases whoever holds (specialistID, start) — a cancelled
// appointment, a failed IVA booking's cleanup — and publishes "release".
// appointmentTypeID is not needed to find the hold (the slot key is per
// resource); it is checked when given.
func (e *Engine) ReleaseSlot(ctx context.Context, appointmentTypeID, specialistID string, start time.Time) (bool, error) {
	const op = "holds.ReleaseSlot"
	if !validID(specialistID) || start.IsZero() {
		return false, invalid(op, "specialistId and slot start are required")
	}
	h, _, found, err := e.HolderOf(ctx, specialistID, start)
	if err != nil || !found || (appointmentTypeID != "" && h.AppointmentTypeID != appointmentTypeID) {
		return false, err
	}
	return e.release(ctx, op, "", "", h.HoldID)
}

// HolderOf reads the canonical slot key: the hold on (specialistID, start)
// whatever its face, and its remaining TTL.
func (e *Engine) HolderOf(ctx context.Context, specialistID string, start time.Time) (Hold, time.Duration, bool, error) {
	const op = "holds.HolderOf"
	key := e.kRes(specialistID).slot(specialistID, start)
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	switch {
	case errors.Is(err, redis.Nil):
		return Hold{}, 0, false, nil
	case err != nil:
		return Hold{}, 0, false, unavailable(op, err)
	}
	h, err := decodeHoldJSON(get.Val())
	if err != nil {
		return Hold{}, 0, false, fmt.Errorf("%s: %w", op, err)
	}
	return h, pttl.Val(), true, nil
}

// HoldersOf is HolderOf for many slots in one pipeline; a slot nobody holds
// has a zero Hold (HoldID ""). On Cluster the pipeline goes to the node of
// each key's shard (one node with one shard).
func (e *Engine) HoldersOf(ctx context.Context, specialistIDs []string, starts []time.Time) ([]Hold, error) {
	const op = "holds.HoldersOf"
	if len(specialistIDs) != len(starts) {
		return nil, invalid(op, "specialistIds and starts differ in length")
	}
	out := make([]Hold, len(starts))
	cmds := make([]*redis.StringCmd, len(starts))
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range starts {
			cmds[i] = p.Get(ctx, e.kRes(specialistIDs[i]).slot(specialistIDs[i], starts[i]))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(op, err)
	}
	for i, c := range cmds {
		if c.Err() == nil {
			if h, err := decodeHoldJSON(c.Val()); err == nil {
				out[i] = h
			} else {
				out[i] = Hold{HoldID: "?"} // unreadable: treat as someone else's
			}
		}
	}
	return out, nil
}

// Confirm turns clientID's live web hold holdID into a booking in one
// script: it checks the hold is live and clientID's web hold
// (ErrHoldNotFound, ErrNotOwner),
// ends it and its indexes, keeps the canonical slot key as the booking's
// claim until the slot ends (ReleaseBooking frees it), publishes "confirm", and — when cooldown > 0
// (0 takes Config.Cooldown, < 0 none) — sets the cooldown
// client_limit:<clientId>:<appointmentTypeId> with its index by
// appointmentID. The web face calls it after the booking is recorded (see
// the holdshttp package for the order and the compensation).
func (e *Engine) Confirm(ctx context.Context, clientID, holdID, appointmentID string, cooldown time.Duration) (Hold, error) {
	const op = "holds.Confirm"
	if !validID(clientID) || !validID(holdID) || !validID(appointmentID) {
		return Hold{}, invalid(op, "clientId, holdId and appointmentId are required")
	}
	if cooldown == 0 {
		cooldown = e.cfg.Cooldown
	}
	r, found, err := e.loadRecord(ctx, op, holdID)
	if err != nil {
		return Hold{}, err
	}
	if !found {
		return Hold{}, coded(contracts.CodeNotFound, op, ErrHoldNotFound)
	}
	if !r.ownedBy(FaceWeb, clientID) { // before any write: a split confirm writes the cooldown first
		return Hold{}, coded(contracts.CodeConflict, op, ErrNotOwner)
	}
	return e.confirm(ctx, op, r, appointmentID, cooldown)
}

// confirm is Confirm's work on the hold's record r: one script where the
// client's index, its cooldown and the cooldown's index live in the
// resource shard; otherwise (split.go) the cooldown first, then the
// confirm, then the quota entry.
func (e *Engine) confirm(ctx context.Context, op string, r record, appointmentID string, cooldown time.Duration) (Hold, error) {
	h, holdID := r.Hold, r.Hold.HoldID
	now := e.cfg.Now()
	value := mustJSON(cooldownValue{BookedAt: now.UTC().Format(rfc3339Milli), AppointmentTypeID: h.AppointmentTypeID,
		CooldownMinutes: int(cooldown / time.Minute), AppointmentID: appointmentID})
	keys, split := e.keysOf(r)
	kr := e.kRes(h.SpecialistID)
	one := !split && e.r.ks[e.r.appt(appointmentID)].p == kr.p
	cd := ms(cooldown)
	if one {
		keys = append(keys, kr.cooldown(h.ClientID, h.AppointmentTypeID), kr.cooldownIndex(appointmentID))
	} else {
		keys = append(keys, keys[3], keys[3])
		if cooldown > 0 {
			if err := e.setCooldown(ctx, h.ClientID, h.AppointmentTypeID, appointmentID, value, cooldown); err != nil {
				return Hold{}, unavailable(op, err)
			}
		}
		cd = 0
	}
	booked := mustJSON(bookedClaim{Hold: h, AppointmentID: appointmentID})
	n, err := lua.confirm.Run(ctx, e.hot, keys, holdID, h.ClientID, e.channel(h.AppointmentTypeID),
		event(EventConfirm, h), cd, value, booked, h.SlotEndDate.Sub(now).Milliseconds()).Int()
	if err != nil {
		return Hold{}, unavailable(op, err)
	}
	if n != confirmDone && !one && cooldown > 0 { // refused: the cooldown set above goes again
		e.dropCooldown(ctx, appointmentID)
	}
	switch n {
	case confirmNoHold:
		return Hold{}, coded(contracts.CodeNotFound, op, ErrHoldNotFound)
	case confirmForeign:
		return Hold{}, coded(contracts.CodeConflict, op, ErrNotOwner)
	}
	if split {
		e.unindex(ctx, h.ClientID, holdID)
	}
	return h, nil
}

// dropCooldown clears appointmentID's cooldown after a refused split
// confirm (best effort: the web face clears it too when it undoes the
// booking).
func (e *Engine) dropCooldown(ctx context.Context, appointmentID string) {
	if _, err := e.ClearCooldown(ctx, appointmentID); err != nil {
		e.cfg.Logger.Warn("holds: cooldown of a refused confirm left", "appointmentId", appointmentID, "err", err)
	}
}

// bookedClaim is the canonical slot key's value after a web booking: the
// hold's JSON plus the appointment, kept until the slot ends.
type bookedClaim struct {
	Hold
	AppointmentID string `json:"appointmentId"`
}

// ReleaseBooking frees the slot a web booking of appointmentID kept — the
// appointment was cancelled — and publishes "release". slot names the slot
// (AppointmentTypeID, SpecialistID, SlotStartDate; its other fields are
// not read): the event is the booked hold the slot key holds — its id
// (shown as its Ref on the stream), its real slot times and holdExpiresAt
// —, whatever the caller knows of it. False when the slot key is not that
// booking's claim (already ended, or another hold's).
func (e *Engine) ReleaseBooking(ctx context.Context, appointmentID string, slot Hold) (bool, error) {
	const op = "holds.ReleaseBooking"
	if !validID(appointmentID) || !validID(slot.SpecialistID) || !validID(slot.AppointmentTypeID) || slot.SlotStartDate.IsZero() {
		return false, invalid(op, "appointmentId, appointmentTypeId, specialistId and slot start are required")
	}
	n, err := lua.releaseBooked.Run(ctx, e.hot, []string{e.kRes(slot.SpecialistID).slot(slot.SpecialistID, slot.SlotStartDate)}, appointmentID,
		e.channel(slot.AppointmentTypeID)).Int()
	if err != nil {
		return false, unavailable(op, err)
	}
	return n == bookedReleased, nil
}

// BookedAppointment is the appointment id of the web booking that keeps
// (specialistID, start), or "" when the slot is free or merely held.
func (e *Engine) BookedAppointment(ctx context.Context, specialistID string, start time.Time) (string, error) {
	const op = "holds.BookedAppointment"
	raw, err := e.hot.Get(ctx, e.kRes(specialistID).slot(specialistID, start)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", unavailable(op, err)
	}
	var b bookedClaim
	if json.Unmarshal([]byte(raw), &b) != nil {
		return "", nil
	}
	return b.AppointmentID, nil
}

// cooldownValue is the client_limit value (docs/keyspace.md#holds).
type cooldownValue struct {
	BookedAt          string `json:"bookedAt"`
	AppointmentTypeID string `json:"appointmentTypeId"`
	CooldownMinutes   int    `json:"cooldownMinutes"`
	AppointmentID     string `json:"appointmentId"`
}

// ClearCooldown deletes the cooldown a booking of appointmentID set (the
// appointment was cancelled), through the index by appointment id — no
// SCAN. False when there was none.
func (e *Engine) ClearCooldown(ctx context.Context, appointmentID string) (bool, error) {
	const op = "holds.ClearCooldown"
	if !validID(appointmentID) {
		return false, invalid(op, "appointmentId is required")
	}
	idx := e.r.ks[e.r.appt(appointmentID)].cooldownIndex(appointmentID)
	key, err := e.hot.Get(ctx, idx).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, unavailable(op, err)
	}
	cleared, err := e.clearCooldown(ctx, appointmentID, idx, key)
	if err != nil {
		return false, unavailable(op, err)
	}
	return cleared, nil
}

// Active is the snapshot of appointmentTypeID's live holds (both faces),
// earliest expiry first.
func (e *Engine) Active(ctx context.Context, appointmentTypeID string) ([]Hold, error) {
	const op = "holds.Active"
	if !validID(appointmentTypeID) {
		return nil, invalid(op, "appointmentTypeId is required")
	}
	now := e.cfg.Now().UnixMilli()
	n := e.r.set.N()
	zs := make([]*redis.ZSliceCmd, n)
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range e.r.ks {
			zs[i] = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: k.active(appointmentTypeID),
				Start: fmt.Sprintf("(%d", now), Stop: "+inf", ByScore: true})
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(op, err)
	}
	type entry struct {
		id    string
		shard int
		exp   float64
	}
	var all []entry
	for i, z := range zs {
		for _, m := range z.Val() {
			all = append(all, entry{id: m.Member.(string), shard: i, exp: m.Score})
		}
	}
	if len(all) == 0 {
		return []Hold{}, nil
	}
	// Earliest expiry first across shards (each shard's ZRANGE is already
	// in that order, ties by id; a stable sort keeps it).
	slices.SortStableFunc(all, func(a, b entry) int { return cmp.Compare(a.exp, b.exp) })
	gets := make([]*redis.StringCmd, len(all))
	_, err = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, en := range all {
			gets[i] = p.HGet(ctx, e.r.ks[en.shard].records(), en.id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(op, err)
	}
	out := make([]Hold, 0, len(all))
	for _, g := range gets {
		var r record
		if g.Err() == nil && json.Unmarshal([]byte(g.Val()), &r) == nil {
			out = append(out, r.Hold)
		}
	}
	return out, nil
}

// Read is a face's GET of one of its own keys (from FaceKey) with its TTL.
func (e *Engine) Read(ctx context.Context, key string) (string, time.Duration, bool, error) {
	const op = "holds.Read"
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	switch {
	case errors.Is(err, redis.Nil):
		return "", 0, false, nil
	case err != nil:
		return "", 0, false, unavailable(op, err)
	}
	return get.Val(), pttl.Val(), true, nil
}

// ReadMany GETs keys (from SlotKey / FaceKey) in one pipeline; found[i]
// false where a key is missing. On Cluster the pipeline goes to the node of
// each key's shard (one node with one shard).
func (e *Engine) ReadMany(ctx context.Context, keys []string) (vals []string, found []bool, err error) {
	const op = "holds.ReadMany"
	cmds := make([]*redis.StringCmd, len(keys))
	_, err = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, unavailable(op, err)
	}
	vals, found = make([]string, len(keys)), make([]bool, len(keys))
	for i, c := range cmds {
		vals[i], found[i] = c.Val(), c.Err() == nil
	}
	return vals, found, nil
}
