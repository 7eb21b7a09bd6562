package holds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Claim takes a hold for r.ClientID (POST /v1/holds, docs/holds.md#the-web-face-v1holds; the IVA face
// with its own Face, TTL and FaceKey).
//
// With r.SpecialistID set it claims exactly that specialist; otherwise it
// tries r.Candidates in Order: claim, and when one is taken exclude it and
// try the next, until one succeeds (ErrNoCandidates when there were none,
// the last *TakenError when all were taken). Each attempt is one script
// (lua/claim.lua): the cooldown, the canonical slot key shared by both faces,
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
	h := Hold{HoldID: e.r.mint(e.r.res(r.SpecialistID), e.cfg.NewID), ClientID: r.ClientID, AppointmentTypeID: r.AppointmentTypeID,
		SpecialistID: r.SpecialistID, SlotStartDate: r.SlotStart, SlotEndDate: r.SlotEnd,
		HoldExpiresAt: now.Add(r.TTL).UTC(), Face: r.Face}
	rec := record{Hold: h, SlotKey: e.kRes(h.SpecialistID).slot(h.SpecialistID, h.SlotStartDate), FaceKey: e.faceKeyOf(r)}
	value := mustJSON(h)
	return h, rec, value, valutil.ValOrDefault(r.FaceValue, value)
}

func (e *Engine) claimOne(ctx context.Context, op string, r ClaimRequest) (Claimed, error) {
	if err := e.checkFace(op, r); err != nil {
		return Claimed{}, err
	}
	now := e.cfg.Now()
	h, rec, value, faceValue := e.newHold(r, now)
	keys, split := e.keysOf(rec)
	maxHolds, cooldown := r.MaxHolds, r.Cooldown > 0
	if split { // split.go: the quota and the cooldown first, in the client's shard
		if err := e.reserve(ctx, op, r, h.HoldID, now); err != nil {
			return e.refused(ctx, op, r, now, err)
		}
		keys = append(keys, keys[3])
		maxHolds, cooldown = 0, false
	} else {
		keys = append(keys, e.kCli(r.ClientID).cooldown(r.ClientID, r.AppointmentTypeID))
	}
	reply, err := lua.claim.Run(ctx, e.hot, keys, value, faceValue, h.HoldID, r.ClientID, r.Face,
		ms(r.TTL), now.UnixMilli(), maxHolds, boolArg(cooldown), e.channel(r.AppointmentTypeID),
		event(EventHold, h), mustJSON(rec), boolArg(r.Refresh), r.AppointmentTypeID).Slice()
	if err != nil { // the claim may have run: a reserved entry stays until it expires
		return Claimed{}, unavailable(op, err)
	}
	code, val, left, err := triple(reply)
	if err != nil {
		return Claimed{}, fmt.Errorf("%s: %w", op, err)
	}
	if split && code != claimNew {
		e.unindex(ctx, r.ClientID, h.HoldID)
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
		if split && r.Refresh {
			e.extendOwn(ctx, r.ClientID, own, r.TTL)
		}
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

// checkFace refuses, with several shards, a face key that does not end
// with the specialist: FaceKey finds a face key's shard from its last
// field, so every reader must land where the claim writes.
func (e *Engine) checkFace(op string, r ClaimRequest) error {
	if e.r.set.N() == 1 || r.FaceKey == "" || e.r.faceShard(r.FaceKey) == e.r.res(r.SpecialistID) {
		return nil
	}
	return invalid(op, "face key %q must end with the specialist %q", r.FaceKey, r.SpecialistID)
}

// refused is a split claim refused in the client's shard: a quota refusal
// is answered as the one-script claim answers it when the client already
// holds this very slot on this face (its hold back, unchanged).
func (e *Engine) refused(ctx context.Context, op string, r ClaimRequest, now time.Time, err error) (Claimed, error) {
	var qe *QuotaError
	if !errors.As(err, &qe) {
		return Claimed{}, err
	}
	raw, pttl, found, rerr := e.Read(ctx, e.kRes(r.SpecialistID).slot(r.SpecialistID, r.SlotStart))
	if rerr != nil {
		return Claimed{}, unavailable(op, rerr)
	}
	var b bookedClaim
	if !found || json.Unmarshal([]byte(raw), &b) != nil || b.AppointmentID != "" || b.ClientID != r.ClientID ||
		b.Face != r.Face || b.AppointmentTypeID != r.AppointmentTypeID {
		return Claimed{}, err
	}
	own := b.Hold
	own.HoldExpiresAt = now.Add(pttl).UTC()
	return Claimed{Hold: own, TTL: pttl}, nil
}

// extendOwn raises a refreshed own hold's quota entry (best effort: the
// IVA face, which refreshes, has no quota).
func (e *Engine) extendOwn(ctx context.Context, clientID string, h Hold, ttl time.Duration) {
	if err := e.extend(ctx, clientID, h.HoldID, h.HoldExpiresAt, ttl, false); err != nil {
		e.cfg.Logger.Warn("holds: quota entry not extended", "clientId", clientID, "holdRef", Ref(h.HoldID), "err", err)
	}
}

func (e *Engine) faceKeyOf(r ClaimRequest) string {
	k := e.kRes(r.SpecialistID)
	if r.FaceKey != "" {
		return k.face(r.FaceKey)
	}
	return k.webHold(r.AppointmentTypeID, r.SpecialistID, r.SlotStart)
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
	d, err := e.hot.PTTL(ctx, e.kCli(clientID).cooldown(clientID, appointmentTypeID)).Result()
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
