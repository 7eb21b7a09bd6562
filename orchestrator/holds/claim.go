package holds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Claim takes a hold for r.ClientID (seed 002 POST /v1/holds; the IVA face
// with its own Face, TTL and FaceKey).
//
// With r.SpecialistID set it claims exactly that specialist; otherwise it
// tries r.Candidates in Order: claim, and when one is taken exclude it and
// try the next, until one succeeds (ErrNoCandidates when there were none,
// the last *TakenError when all were taken). Each attempt is one script
// (claimScript): the cooldown, the canonical slot key shared by both faces,
// the client's exact quota, the face key, the indexes and the "hold" event
// together. A client claiming a slot it already holds on the same face and
// type gets that hold back (idempotent).
//
// Errors: *TakenError (ErrSlotTaken), *QuotaError, *CooldownError,
// ErrNoCandidates, ErrInvalid, ErrUnavailable.
func (e *Engine) Claim(ctx context.Context, r ClaimRequest) (Hold, error) {
	c, err := e.ClaimDetailed(ctx, r)
	return c.Hold, err
}

// Claimed is a successful claim with what the faces need beyond the Hold.
type Claimed struct {
	Hold
	New bool          // false: the client held it already (Refresh may have raised its TTL)
	TTL time.Duration // the hold's remaining TTL
}

// ClaimDetailed is Claim telling a new hold from one the client already had.
func (e *Engine) ClaimDetailed(ctx context.Context, r ClaimRequest) (Claimed, error) {
	const op = "holds.Claim"
	if err := e.checkClaim(op, &r); err != nil {
		return Claimed{}, err
	}
	if r.SpecialistID != "" {
		return e.claimOne(ctx, op, r)
	}
	order := Order(r.AppointmentTypeID, r.SlotStart, r.Candidates)
	if len(order) == 0 {
		return Claimed{}, coded(contracts.CodeConflict, op, ErrNoCandidates)
	}
	var last error
	for _, c := range order {
		if !validID(c.SpecialistID) {
			continue
		}
		try := r
		try.SpecialistID = c.SpecialistID
		c, err := e.claimOne(ctx, op, try)
		if !errors.Is(err, ErrSlotTaken) {
			return c, err
		}
		last = err
	}
	if last == nil {
		return Claimed{}, coded(contracts.CodeConflict, op, ErrNoCandidates)
	}
	return Claimed{}, last
}

func (e *Engine) checkClaim(op string, r *ClaimRequest) error {
	switch {
	case !validID(r.AppointmentTypeID):
		return invalid(op, "appointmentTypeId is missing or has ':', '{', '}' or spaces")
	case !validID(r.ClientID):
		return invalid(op, "clientId is missing or has ':', '{', '}' or spaces")
	case r.SpecialistID != "" && !validID(r.SpecialistID):
		return invalid(op, "specialistId has ':', '{', '}' or spaces")
	case r.SlotStart.IsZero():
		return invalid(op, "slotStartDate is missing")
	case !r.SlotEnd.After(r.SlotStart):
		return invalid(op, "slotEndDate must be after slotStartDate")
	case r.TTL < 0 || r.TTL > maxTTL:
		return invalid(op, "TTL %s is out of range", r.TTL)
	}
	if r.Face == "" {
		r.Face = FaceWeb
	}
	if r.TTL == 0 {
		r.TTL = e.cfg.HoldTTL
	}
	if r.MaxHolds == 0 {
		r.MaxHolds = e.cfg.MaxHolds
	}
	if r.Cooldown == 0 {
		r.Cooldown = e.cfg.Cooldown
	}
	r.SlotStart, r.SlotEnd = r.SlotStart.UTC().Truncate(time.Second), r.SlotEnd.UTC().Truncate(time.Second)
	return nil
}

// newHold is the hold a claim of r at now writes: the hold, its record,
// the slot key's value and the face key's.
func (e *Engine) newHold(r ClaimRequest, now time.Time) (Hold, record, string, string) {
	h := Hold{HoldID: e.cfg.NewID(), ClientID: r.ClientID, AppointmentTypeID: r.AppointmentTypeID,
		SpecialistID: r.SpecialistID, SlotStartDate: r.SlotStart, SlotEndDate: r.SlotEnd,
		HoldExpiresAt: now.Add(r.TTL).UTC(), Face: r.Face}
	rec := record{Hold: h, SlotKey: e.k.slot(h.SpecialistID, h.SlotStartDate), FaceKey: e.faceKeyOf(r)}
	value := mustJSON(h)
	return h, rec, value, valutil.ValOrDefault(r.FaceValue, value)
}

func (e *Engine) claimOne(ctx context.Context, op string, r ClaimRequest) (Claimed, error) {
	now := e.cfg.Now()
	h, rec, value, faceValue := e.newHold(r, now)
	keys := append(e.keysOf(rec), e.k.cooldown(r.ClientID, r.AppointmentTypeID))
	reply, err := claimScript.Run(ctx, e.hot, keys, value, faceValue, h.HoldID, r.ClientID, r.Face,
		ms(r.TTL), now.UnixMilli(), r.MaxHolds, boolArg(r.Cooldown > 0), e.k.channel(r.AppointmentTypeID),
		event(EventHold, h), mustJSON(rec), boolArg(r.Refresh), r.AppointmentTypeID).Slice()
	if err != nil {
		return Claimed{}, unavailable(op, err)
	}
	code, val, left, err := triple(reply)
	if err != nil {
		return Claimed{}, fmt.Errorf("%s: %w", op, err)
	}
	switch code {
	case claimNew:
		return Claimed{Hold: h, New: true, TTL: left}, nil
	case claimOwn:
		own, err := decodeHoldJSON(val)
		if err != nil {
			return Claimed{}, fmt.Errorf("%s: %w", op, err)
		}
		own.HoldExpiresAt = now.Add(left).UTC()
		return Claimed{Hold: own, TTL: left}, nil
	case claimTaken:
		holder, _ := decodeHoldJSON(val) // a foreign value: zero holder, still taken
		return Claimed{}, &TakenError{Holder: holder, ExpiresIn: left}
	case claimQuota:
		return Claimed{}, &QuotaError{Limit: r.MaxHolds, RetryAfter: max(left, 0)}
	default: // claimCooldown
		return Claimed{}, &CooldownError{Remaining: left}
	}
}

func (e *Engine) faceKeyOf(r ClaimRequest) string {
	if r.FaceKey != "" {
		return e.k.face(r.FaceKey)
	}
	return e.k.webHold(r.AppointmentTypeID, r.SpecialistID, r.SlotStart)
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// triple reads a {code, value, ms} script reply.
func triple(reply []any) (code int64, value string, left time.Duration, err error) {
	if len(reply) != 3 {
		return 0, "", 0, fmt.Errorf("holds: script reply has %d elements, want 3", len(reply))
	}
	code, ok1 := reply[0].(int64)
	value, ok2 := reply[1].(string)
	n, ok3 := reply[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return 0, "", 0, fmt.Errorf("holds: script reply %v has the wrong types", reply)
	}
	return code, value, fromMS(n), nil
}

// CooldownRemaining is how long clientID must still wait before holding
// appointmentTypeID again (0: not cooling down; negative: a cooldown
// without TTL).
func (e *Engine) CooldownRemaining(ctx context.Context, clientID, appointmentTypeID string) (time.Duration, error) {
	const op = "holds.CooldownRemaining"
	if !validID(clientID) || !validID(appointmentTypeID) {
		return 0, invalid(op, "clientId and appointmentTypeId are required")
	}
	d, err := e.hot.PTTL(ctx, e.k.cooldown(clientID, appointmentTypeID)).Result()
	if err != nil {
		return 0, unavailable(op, err)
	}
	switch d {
	case -2: // no key (go-redis gives PTTL's -2 and -1 as nanoseconds)
		return 0, nil
	case -1: // a key without TTL
		return -1, nil
	}
	return d, nil
}
