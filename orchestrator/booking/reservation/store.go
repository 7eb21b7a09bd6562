package reservation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// The seed's TTLs.
const (
	DefaultReserveTTL = 90 * time.Second  // enough to confirm and book
	DefaultConfirmTTL = 300 * time.Second // keeps a booked slot from being re-offered
)

// DefaultTimeZone is the location's zone Cloud9 wall-clock times are read in.
const DefaultTimeZone = "America/Chicago"

// Config configures a Store. Zero values take the defaults.
type Config struct {
	// Engine is the hold engine this face claims through (shared with the
	// web face). Default: one built on the Store's Redis with KeyPrefix, used
	// only by this Store.
	Engine *holds.Engine
	// KeyPrefix, when set, goes before the seed's key: "<KeyPrefix>:SlotReservation:…".
	// Only without Engine (an Engine has its own Config.KeyPrefix). Default "".
	KeyPrefix string
	// ReserveTTL is how long Reserve holds a slot. Default 90 s.
	ReserveTTL time.Duration
	// ConfirmTTL is how long Confirm holds a booked slot. Default 300 s.
	ConfirmTTL time.Duration
	// Location is the practice's time zone: a slot's Cloud9 startTime is
	// wall-clock time there. Default America/Chicago.
	Location *time.Location
	// AppointmentTypeID is the appointment type of holds whose slot names
	// none (the events' appointmentTypeId). Default the seed's Cloud9 type.
	AppointmentTypeID string
	// Now stamps reservedAt. Default time.Now.
	Now func() time.Time
	// Logger receives the warning when Filter fails open. Default
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.ReserveTTL = valutil.ValOrDefault(c.ReserveTTL, DefaultReserveTTL)
	c.ConfirmTTL = valutil.ValOrDefault(c.ConfirmTTL, DefaultConfirmTTL)
	c.Location = valutil.ValOrDefaultFunc(c.Location, defaultLocation)
	c.AppointmentTypeID = valutil.ValOrDefault(c.AppointmentTypeID, cloud9.SeedAppointmentTypeGUID)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

// defaultLocation is DefaultTimeZone, or UTC where the system has no zone
// database.
func defaultLocation() *time.Location {
	if loc, err := time.LoadLocation(DefaultTimeZone); err == nil {
		return loc
	}
	return time.UTC
}

func (c Config) validate() error {
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("reservation: KeyPrefix %q must not contain '{' or '}'", c.KeyPrefix)
	case c.Engine != nil && c.KeyPrefix != "":
		return errors.New("reservation: KeyPrefix is the Engine's when an Engine is given")
	case c.ReserveTTL < time.Millisecond:
		return fmt.Errorf("reservation: ReserveTTL %s must be at least 1ms", c.ReserveTTL)
	case c.ConfirmTTL < time.Millisecond:
		return fmt.Errorf("reservation: ConfirmTTL %s must be at least 1ms", c.ConfirmTTL)
	}
	return nil
}

// Store is the IVA face of the hold engine. It is safe for concurrent use
// by any number of instances.
type Store struct {
	eng *holds.Engine
	cfg Config
}

// New checks cfg and returns a Store on rdb (or on cfg.Engine).
func New(rdb redis.UniversalClient, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	eng := cfg.Engine
	if eng == nil {
		prefix := cfg.KeyPrefix
		if prefix != "" {
			prefix += ":"
		}
		var err error
		if eng, err = holds.New(rdb, holds.Config{KeyPrefix: prefix, Now: cfg.Now, Logger: cfg.Logger}); err != nil {
			return nil, fmt.Errorf("reservation: %w", err)
		}
	}
	return &Store{eng: eng, cfg: cfg}, nil
}

// Engine is the hold engine the Store claims through.
func (st *Store) Engine() *holds.Engine { return st.eng }

// Outcome says how Reserve or Confirm succeeded.
type Outcome string

// The outcomes.
const (
	Reserved  Outcome = "reserved"  // Reserve took a free slot
	Refreshed Outcome = "refreshed" // Reserve: this session held it already (idempotent)
	Confirmed Outcome = "confirmed" // Confirm extended this session's hold
	Retaken   Outcome = "retaken"   // Confirm: the hold had expired and nobody else took it; taken again
)

// Result is a successful Reserve or Confirm.
type Result struct {
	Outcome     Outcome
	Reservation Reservation   // the value now stored (an earlier Reserve's, when Refreshed)
	ExpiresIn   time.Duration // the hold's remaining TTL
}

// slotRef is a slot resolved for the engine.
type slotRef struct {
	key   string // the face key without prefix
	req   holds.ClaimRequest
	value Reservation
}

func (st *Store) resolve(op string, s slots.Slot, sessionID, patientName string, ttl time.Duration) (slotRef, error) {
	if sessionID == "" {
		return slotRef{}, invalid(op, errors.New("reservation: a sessionId is required"))
	}
	key, err := KeyOf(s)
	if err != nil {
		return slotRef{}, invalid(op, err)
	}
	start, err := st.start(s)
	if err != nil {
		return slotRef{}, invalid(op, err)
	}
	atid := strings.TrimSpace(s.AppointmentTypeGUID)
	if atid == "" {
		atid = st.cfg.AppointmentTypeID
	}
	v := Reservation{SessionID: sessionID, ReservedAt: st.cfg.Now(), PatientName: patientName, SlotStartTime: s.StartTime}
	raw, err := json.Marshal(v)
	if err != nil {
		return slotRef{}, fmt.Errorf("%s: %w", op, err)
	}
	return slotRef{key: key, value: v, req: holds.ClaimRequest{AppointmentTypeID: atid, ClientID: sessionID,
		SlotStart: start, SlotEnd: start.Add(s.Length()), SpecialistID: column(s), MaxHolds: -1, Cooldown: -1,
		Face: holds.FaceIVA, TTL: ttl, FaceKey: key, FaceValue: string(raw), Refresh: true}}, nil
}

// start is the slot's start in UTC: its Cloud9 wall-clock time read in
// the location's zone, converted as the availability face converts it
// (slots.WallInstant: a wall clock in a spring-forward gap maps to
// the same instant on both faces, so both claim the same slot key).
func (st *Store) start(s slots.Slot) (time.Time, error) {
	t, err := slots.ParseTime(s.StartTime)
	if err != nil {
		return time.Time{}, fmt.Errorf("reservation: %w", err)
	}
	date := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	wall := slots.WallInstant(st.cfg.Location, date, t.Hour()*60+t.Minute())
	return wall.Add(time.Duration(t.Second()) * time.Second).UTC(), nil
}

// column is the slot's chair as the caller spelled it (the engine's slot
// key case-folds it; events carry it as Cloud9 gave it to the caller).
func column(s slots.Slot) string { return strings.TrimSpace(s.ScheduleColumnGUID) }

// Reserve holds s for sessionID (docs/booking.md#createappt-step-by-step, step 4) through the engine: the
// slot's canonical key is shared with web holds, so a slot held on the web
// is refused too. It fails with a *HeldError when another session or a web
// client holds s, with an error matching ErrUnavailable when Redis is down
// (proceed: fail open), and with CodeInvalid when s cannot be keyed. The
// reservation is published as a "hold" event.
func (st *Store) Reserve(ctx context.Context, s slots.Slot, sessionID, patientName string) (Result, error) {
	const op = "reservation.Reserve"
	ref, err := st.resolve(op, s, sessionID, patientName, st.cfg.ReserveTTL)
	if err != nil {
		return Result{}, err
	}
	c, err := st.eng.ClaimDetailed(ctx, ref.req)
	if err != nil {
		return Result{}, st.claimError(ctx, op, s, ref, err)
	}
	return st.claimed(ctx, s, ref, c)
}

// claimed is Reserve's and Adopt's answer once the engine took the slot:
// Reserved with the new reservation, or Refreshed with the one stored.
func (st *Store) claimed(ctx context.Context, s slots.Slot, ref slotRef, c holds.Claimed) (Result, error) {
	if c.New {
		return Result{Outcome: Reserved, Reservation: ref.value, ExpiresIn: c.TTL}, nil
	}
	r, _, _, err := st.Get(ctx, s)
	if err != nil {
		return Result{}, err
	}
	return Result{Outcome: Refreshed, Reservation: r, ExpiresIn: c.TTL}, nil
}

// WebHold names a web hold (POST /v1/holds) that Adopt turns into a
// reservation, with what the engine keeps of the hand-over (Memo, Keep:
// see holds.AdoptRequest).
type WebHold struct {
	ClientID string
	HoldID   string
	Memo     string
	Keep     time.Duration
}

// Adopt is Reserve for a slot the web face holds for this very booking:
// the web hold from becomes sessionID's reservation of s (ReserveTTL) in
// one step, the slot never free in between (holds.Engine.Adopt), so the
// booking core's Reserve, Confirm and Release of sessionID then treat it
// as their own. A slot sessionID holds already is Refreshed; a free one
// (the web hold ended meanwhile) is Reserved; anyone else's hold is a
// *HeldError. s is named as the booking core names it to Reserve (the
// appointment type decides the hold's type: give the same, or none, both
// times).
func (st *Store) Adopt(ctx context.Context, s slots.Slot, sessionID, patientName string, from WebHold) (Result, error) {
	const op = "reservation.Adopt"
	ref, err := st.resolve(op, s, sessionID, patientName, st.cfg.ReserveTTL)
	if err != nil {
		return Result{}, err
	}
	c, err := st.eng.Adopt(ctx, holds.AdoptRequest{ClaimRequest: ref.req, FromClientID: from.ClientID, FromHoldID: from.HoldID,
		Memo: from.Memo, Keep: from.Keep})
	if err != nil {
		return Result{}, st.claimError(ctx, op, s, ref, err)
	}
	return st.claimed(ctx, s, ref, c)
}

// Confirm holds s for ConfirmTTL after sessionID booked it, if sessionID
// still holds it or nobody does; a *HeldError says another session (or a
// web client) took it meanwhile (the booking stands; log it). patientName
// is used only when the hold is taken again. The booking is published as a
// "confirm" event; the kept hold later expires without a "release".
func (st *Store) Confirm(ctx context.Context, s slots.Slot, sessionID, patientName string) (Result, error) {
	const op = "reservation.Confirm"
	ref, err := st.resolve(op, s, sessionID, patientName, st.cfg.ConfirmTTL)
	if err != nil {
		return Result{}, err
	}
	_, out, left, err := st.eng.Keep(ctx, holds.KeepRequest{ClaimRequest: ref.req})
	if err != nil {
		return Result{}, st.claimError(ctx, op, s, ref, err)
	}
	if out == holds.Retaken {
		return Result{Outcome: Retaken, Reservation: ref.value, ExpiresIn: left}, nil
	}
	r, _, _, err := st.Get(ctx, s)
	if err != nil {
		return Result{}, err
	}
	return Result{Outcome: Confirmed, Reservation: r, ExpiresIn: left}, nil
}

// claimError maps the engine's refusal to this package's errors.
func (st *Store) claimError(ctx context.Context, op string, s slots.Slot, ref slotRef, err error) error {
	var te *holds.TakenError
	switch {
	case errors.As(err, &te):
		he := &HeldError{Key: st.eng.FaceKey(ref.key), ExpiresIn: te.ExpiresIn}
		if te.Holder.Face == holds.FaceIVA {
			if r, _, found, gerr := st.Get(ctx, s); gerr == nil && found {
				he.ReservedAt, he.SlotStartTime = r.ReservedAt, r.SlotStartTime
			}
		}
		return he
	case errors.Is(err, holds.ErrUnavailable):
		return unavailable(op, err)
	case errors.Is(err, holds.ErrInvalid):
		return invalid(op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Release deletes sessionID's hold on s (docs/holds.md#the-hold-engine:
// after a failed booking) and publishes "release". It reports whether a hold was deleted;
// a hold of another session or of a web client is left alone (false, nil).
func (st *Store) Release(ctx context.Context, s slots.Slot, sessionID string) (bool, error) {
	const op = "reservation.Release"
	ref, err := st.resolve(op, s, sessionID, "", st.cfg.ReserveTTL)
	if err != nil {
		return false, err
	}
	h, _, found, err := st.eng.HolderOf(ctx, ref.req.SpecialistID, ref.req.SlotStart)
	if err != nil {
		return false, unavailable(op, err)
	}
	if !found || h.Face != holds.FaceIVA || h.ClientID != sessionID {
		return false, nil
	}
	ok, err := st.eng.ReleaseAs(ctx, holds.FaceIVA, sessionID, h.HoldID)
	if err != nil && !errors.Is(err, holds.ErrNotOwner) {
		return false, unavailable(op, err)
	}
	return ok, nil
}

// Get returns the hold on s, if any, and its remaining TTL: the
// SlotReservation value, or for a slot held on the web face a Reservation
// naming the web client (SessionID) and nothing else.
func (st *Store) Get(ctx context.Context, s slots.Slot) (r Reservation, ttl time.Duration, found bool, err error) {
	const op = "reservation.Get"
	ref, err := st.resolve(op, s, "-", "", st.cfg.ReserveTTL)
	if err != nil {
		return Reservation{}, 0, false, err
	}
	key := st.eng.FaceKey(ref.key)
	raw, ttl, found, err := st.eng.Read(ctx, key)
	if err != nil {
		return Reservation{}, 0, false, unavailable(op, err)
	}
	if found {
		_ = json.Unmarshal([]byte(raw), &r) // not the seed's JSON: zero fields
		return r, ttl, true, nil
	}
	h, ttl, found, err := st.eng.HolderOf(ctx, ref.req.SpecialistID, ref.req.SlotStart)
	if err != nil || !found {
		return Reservation{}, 0, false, unavailableIf(op, err)
	}
	return Reservation{SessionID: h.ClientID}, ttl, true, nil
}

func unavailableIf(op string, err error) error {
	if err == nil {
		return nil
	}
	return unavailable(op, err)
}

// HeldByOthers reports for each slot whether anyone other than sessionID
// holds it — another session, any web client (the canonical slot key), or
// another tool that wrote the SlotReservation key — in one pipeline of
// GETs. A slot that cannot be keyed is not held. When Redis fails it logs a
// warning and answers all false with an error matching ErrUnavailable
// (fail open).
func (st *Store) HeldByOthers(ctx context.Context, sessionID string, list []slots.Slot) ([]bool, error) {
	const op = "reservation.HeldByOthers"
	held := make([]bool, len(list))
	var idx []int
	var keys []string
	for i, s := range list {
		start, err := st.start(s)
		face, kerr := KeyOf(s)
		if err != nil || kerr != nil {
			continue
		}
		idx = append(idx, i)
		keys = append(keys, st.eng.SlotKey(column(s), start), st.eng.FaceKey(face))
	}
	vals, found, err := st.eng.ReadMany(ctx, keys)
	if err != nil {
		st.cfg.Logger.Warn("slot reservations unavailable: not filtering (fail open)", "op", op,
			"slots", len(list), "err", err)
		return make([]bool, len(list)), unavailable(op, err)
	}
	for j, i := range idx {
		held[i] = heldByOther(sessionID, vals[2*j], found[2*j], vals[2*j+1], found[2*j+1])
	}
	return held, nil
}

// heldByOther decides from the canonical slot value and the face value.
func heldByOther(sessionID, slotVal string, slotFound bool, faceVal string, faceFound bool) bool {
	if slotFound {
		var h holds.Hold
		if json.Unmarshal([]byte(slotVal), &h) != nil {
			return true
		}
		return sessionID == "" || h.Face != holds.FaceIVA || h.ClientID != sessionID
	}
	if faceFound { // written by another tool, not through the engine
		var r Reservation
		return json.Unmarshal([]byte(faceVal), &r) != nil || r.SessionID != sessionID || sessionID == ""
	}
	return false
}

// Filter returns list without the slots others hold (docs/holds.md#the-hold-engine),
// keeping order; sessionID's own holds stay visible. When Redis fails it
// logs a warning and returns list unchanged, with an error matching
// ErrUnavailable the caller may count; the slots are usable.
func (st *Store) Filter(ctx context.Context, list []slots.Slot, sessionID string) ([]slots.Slot, error) {
	if len(list) == 0 {
		return list, nil
	}
	held, err := st.HeldByOthers(ctx, sessionID, list)
	if err != nil {
		return list, err
	}
	out := make([]slots.Slot, 0, len(list))
	for i, s := range list {
		if !held[i] {
			out = append(out, s)
		}
	}
	return out, nil
}
