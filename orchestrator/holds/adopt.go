package holds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultAdoptionKeep is how long Adopt's record of a hand-over lives.
const DefaultAdoptionKeep = time.Hour

// maxAdoptionKeep bounds AdoptRequest.Keep.
const maxAdoptionKeep = 30 * 24 * time.Hour

// AdoptRequest asks Adopt to hand a live web hold over to another owner
// (the IVA face's reservation of a booking) on the same slot.
type AdoptRequest struct {
	// ClaimRequest is the hold the web hold becomes: SpecialistID, Face,
	// TTL, FaceKey, FaceValue and Refresh as for Claim. Quota and cooldown
	// are not checked (the slot is already held).
	ClaimRequest
	FromClientID string // the web hold's client
	FromHoldID   string // the web hold
	// Memo is kept in the adoption record as given (Adopted returns it).
	Memo string
	// Keep is how long the adoption record lives. Default DefaultAdoptionKeep.
	Keep time.Duration
}

// Adoption is the record Adopt leaves of a hand-over: the web hold as it
// was, the hold it became, and the adopter's memo.
type Adoption struct {
	From      Hold      `json:"from"`
	Hold      Hold      `json:"hold"`
	Memo      string    `json:"memo,omitempty"`
	AdoptedAt time.Time `json:"adoptedAt"`
}

// Adopt hands FromClientID's live web hold FromHoldID over to the hold r
// describes, in one script: where the slot's canonical key is that web
// hold (live, not booked), the web hold ends without a "release" — its face
// key, record and indexes go — and the new hold takes the slot key with
// its own face key, record and indexes, so the slot is never free between
// the two; "hold" is published with the new hold (on the web hold's type's
// channel too when the types differ). An adoption record (key
// holds:adopted:<FromHoldID>, kept r.Keep) remembers the hand-over for
// Adopted. A slot nobody holds any more (the web hold expired meanwhile)
// is claimed the same way; a slot r's owner already holds on r's face is
// answered as Claim answers it (New false, Refresh honoured). Anyone
// else's hold is a *TakenError (nothing changed).
//
// The web face's /book of a slot booked in Cloud9 uses it: the hold
// becomes the booking's IVA reservation, which the booking core then keeps,
// extends while the booking is queued, and releases on a definite failure.
func (e *Engine) Adopt(ctx context.Context, r AdoptRequest) (Claimed, error) {
	const op = "holds.Adopt"
	c := r.ClaimRequest
	c.MaxHolds, c.Cooldown = -1, -1
	if err := e.checkClaim(op, &c); err != nil {
		return Claimed{}, err
	}
	switch {
	case c.SpecialistID == "":
		return Claimed{}, invalid(op, "specialistId is required")
	case !validID(r.FromClientID) || !validID(r.FromHoldID):
		return Claimed{}, invalid(op, "the web hold's clientId and holdId are required")
	case r.Keep < 0 || r.Keep > maxAdoptionKeep:
		return Claimed{}, invalid(op, "Keep %s is out of range", r.Keep)
	}
	if r.Keep == 0 {
		r.Keep = DefaultAdoptionKeep
	}
	// The web hold's own keys, from its record when it still has one.
	from := Hold{HoldID: r.FromHoldID, ClientID: r.FromClientID, AppointmentTypeID: c.AppointmentTypeID,
		SpecialistID: c.SpecialistID, SlotStartDate: c.SlotStart, SlotEndDate: c.SlotEnd, Face: FaceWeb}
	kr := e.kRes(c.SpecialistID)
	fromFace := kr.webHold(c.AppointmentTypeID, c.SpecialistID, c.SlotStart)
	if rec, found, err := e.loadRecord(ctx, op, r.FromHoldID); err != nil {
		return Claimed{}, err
	} else if found && rec.Hold.ClientID == r.FromClientID {
		from, fromFace = rec.Hold, rec.FaceKey
	}
	now := e.cfg.Now()
	h, rec, value, faceValue := e.newHold(c, now)
	oldChannel := ""
	if from.AppointmentTypeID != h.AppointmentTypeID && validID(from.AppointmentTypeID) {
		oldChannel = e.channel(from.AppointmentTypeID)
	}
	adoption := mustJSON(Adoption{From: from, Hold: h, Memo: r.Memo, AdoptedAt: now.UTC()})
	keys, split := e.keysOf(rec)
	fromClient, fromSplit := e.clientKey(kr, r.FromClientID)
	keys = append(keys, fromFace, fromClient, kr.active(from.AppointmentTypeID), kr.adopted(r.FromHoldID))
	if split { // split.go: the new hold's quota entry first (no quota is checked)
		if err := e.extend(ctx, c.ClientID, h.HoldID, h.HoldExpiresAt, c.TTL, true); err != nil {
			return Claimed{}, unavailable(op, err)
		}
	}
	reply, err := lua.adopt.Run(ctx, e.hot, keys, value, faceValue, h.HoldID, c.ClientID, c.Face, ms(c.TTL), now.UnixMilli(),
		e.channel(c.AppointmentTypeID), event(EventHold, h), mustJSON(rec), boolArg(c.Refresh), c.AppointmentTypeID,
		r.FromHoldID, r.FromClientID, FaceWeb, adoption, ms(r.Keep), oldChannel).Slice()
	if err != nil {
		return Claimed{}, unavailable(op, err)
	}
	code, val, left, err := triple(reply)
	if err != nil {
		return Claimed{}, fmt.Errorf("%s: %w", op, err)
	}
	if split && code != 1 {
		e.unindex(ctx, c.ClientID, h.HoldID)
	}
	switch code {
	case 1:
		if fromSplit {
			e.unindex(ctx, r.FromClientID, r.FromHoldID)
		}
		return Claimed{Hold: h, New: true, TTL: left}, nil
	case 2:
		own, err := decodeHoldJSON(val)
		if err != nil {
			return Claimed{}, fmt.Errorf("%s: %w", op, err)
		}
		own.HoldExpiresAt = now.Add(left).UTC()
		if split && c.Refresh {
			e.extendOwn(ctx, c.ClientID, own, c.TTL)
		}
		return Claimed{Hold: own, TTL: left}, nil
	}
	holder, _ := decodeHoldJSON(val)
	return Claimed{}, &TakenError{Holder: holder, ExpiresIn: left}
}

// Adopted reads the record Adopt left of clientID's web hold holdID:
// found false when there is none (never adopted, or older than its Keep)
// or it is another client's.
func (e *Engine) Adopted(ctx context.Context, clientID, holdID string) (Adoption, bool, error) {
	const op = "holds.Adopted"
	if !validID(clientID) || !validID(holdID) {
		return Adoption{}, false, invalid(op, "clientId and holdId are required")
	}
	raw, err := e.hot.Get(ctx, e.kHold(holdID).adopted(holdID)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return Adoption{}, false, nil
	case err != nil:
		return Adoption{}, false, unavailable(op, err)
	}
	var a Adoption
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		e.cfg.Logger.Warn("holds: unreadable adoption record", "holdRef", Ref(holdID), "err", err)
		return Adoption{}, false, nil
	}
	if a.From.ClientID != clientID {
		return Adoption{}, false, nil
	}
	return a, true, nil
}

// StartCooldown sets clientID's cooldown on appointmentTypeID after a
// booking of appointmentID that was not made through Confirm (a web
// booking whose hold Adopt handed to the booking core): the key and its
// index by appointment id, as Confirm sets them, so ClearCooldown finds
// it. cooldown 0 takes Config.Cooldown; < 0 sets none.
func (e *Engine) StartCooldown(ctx context.Context, clientID, appointmentTypeID, appointmentID string, cooldown time.Duration) error {
	const op = "holds.StartCooldown"
	if !validID(clientID) || !validID(appointmentTypeID) || !validID(appointmentID) {
		return invalid(op, "clientId, appointmentTypeId and appointmentId are required")
	}
	if cooldown == 0 {
		cooldown = e.cfg.Cooldown
	}
	if cooldown < 0 {
		return nil
	}
	value := mustJSON(cooldownValue{BookedAt: e.cfg.Now().UTC().Format(rfc3339Milli), AppointmentTypeID: appointmentTypeID,
		CooldownMinutes: int(cooldown / time.Minute), AppointmentID: appointmentID})
	if err := e.setCooldown(ctx, clientID, appointmentTypeID, appointmentID, value, cooldown); err != nil {
		return unavailable(op, err)
	}
	return nil
}
