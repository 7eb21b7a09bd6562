package holds

import (
	"context"
	"fmt"
	"time"
)

// KeepRequest asks Keep to hold a booked slot (the IVA face's Confirm).
type KeepRequest struct {
	ClaimRequest // SpecialistID required; Face, TTL, FaceKey, FaceValue as for Claim
}

// KeepOutcome says how Keep succeeded.
type KeepOutcome int

// The outcomes.
const (
	Kept    KeepOutcome = 1 // this client's hold, extended to TTL
	Retaken KeepOutcome = 2 // nobody held it any more: taken again
)

// Keep is the IVA face's Confirm (docs/holds.md#the-hold-engine: after a successful booking the
// slot stays held for 300 s so it is not re-offered). If the client (same
// face) holds the slot, its hold is extended to r.TTL; if nobody does, it is
// taken again; either way it is marked confirmed (it then expires without a
// "release") and "confirm" is published. Another owner's hold gives a
// *TakenError (nothing changed). One script; a hold that changes between
// the read and the script is read again (at most 3 times).
func (e *Engine) Keep(ctx context.Context, r KeepRequest) (Hold, KeepOutcome, time.Duration, error) {
	const op = "holds.Keep"
	c := r.ClaimRequest
	if err := e.checkClaim(op, &c); err != nil {
		return Hold{}, 0, 0, err
	}
	if c.SpecialistID == "" {
		return Hold{}, 0, 0, invalid(op, "specialistId is required")
	}
	for range 3 {
		cur, _, found, err := e.HolderOf(ctx, c.SpecialistID, c.SlotStart)
		if err != nil {
			return Hold{}, 0, 0, err
		}
		h, out, left, again, err := e.keepOnce(ctx, op, c, cur, found)
		if !again {
			return h, out, left, err
		}
	}
	return Hold{}, 0, 0, fmt.Errorf("%s: the slot kept changing; try again", op)
}

func (e *Engine) keepOnce(ctx context.Context, op string, c ClaimRequest, cur Hold, found bool) (Hold, KeepOutcome, time.Duration, bool, error) {
	now := e.cfg.Now()
	expected, newID := "", e.r.mint(e.r.res(c.SpecialistID), e.cfg.NewID)
	h := Hold{HoldID: newID, ClientID: c.ClientID, AppointmentTypeID: c.AppointmentTypeID, SpecialistID: c.SpecialistID,
		SlotStartDate: c.SlotStart, SlotEndDate: c.SlotEnd, Face: c.Face}
	if found && cur.ClientID == c.ClientID && cur.Face == c.Face {
		expected, h = cur.HoldID, cur
	}
	h.HoldExpiresAt = now.Add(c.TTL).UTC()
	rec := record{Hold: h, SlotKey: e.kRes(h.SpecialistID).slot(h.SpecialistID, h.SlotStartDate), FaceKey: e.faceKeyOf(c), Confirmed: true}
	value := mustJSON(h)
	faceValue := c.FaceValue
	if faceValue == "" {
		faceValue = value
	}
	keys, split := e.keysOf(rec)
	if split { // split.go: the quota entry first (no quota is checked)
		if err := e.extend(ctx, c.ClientID, h.HoldID, h.HoldExpiresAt, c.TTL, true); err != nil {
			return Hold{}, 0, 0, false, unavailable(op, err)
		}
	}
	reply, err := lua.keep.Run(ctx, e.hot, keys, expected, c.ClientID, c.Face, now.UnixMilli(), ms(c.TTL),
		e.channel(h.AppointmentTypeID), value, faceValue, mustJSON(rec), event(EventConfirm, h), newID).Slice()
	if err != nil {
		return Hold{}, 0, 0, false, unavailable(op, err)
	}
	code, val, left, err := triple(reply)
	if split && expected == "" && (err != nil || code == keepChanged || code == keepTaken) {
		e.unindex(ctx, c.ClientID, newID) // the new id was never used
	}
	switch {
	case err != nil:
		return Hold{}, 0, 0, false, fmt.Errorf("%s: %w", op, err)
	case code == keepChanged:
		return Hold{}, 0, 0, true, nil
	case code == keepTaken:
		holder, _ := decodeHoldJSON(val)
		return Hold{}, 0, 0, false, &TakenError{Holder: holder, ExpiresIn: left}
	}
	return h, KeepOutcome(code), left, false, nil // keepKept or keepRetaken
}
