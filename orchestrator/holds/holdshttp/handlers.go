package holdshttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// AppointmentType is what the web face needs of an appointment type.
type AppointmentType struct {
	ID              string
	CooldownMinutes int // <= 0: the engine's default
	SpecialistIDs   []string
	// External: the type is booked in the practice's system of record
	// (Cloud9) through Config.Booker, and a booking names the patient.
	External bool
}

// Appointment is a booking made through /v1. The last three fields are
// set for an External type only.
type Appointment struct {
	AppointmentID     string    `json:"appointmentId"`
	AppointmentTypeID string    `json:"appointmentTypeId"`
	SpecialistID      string    `json:"specialistId"`
	ClientID          string    `json:"clientId"`
	SlotStartDate     time.Time `json:"slotStartDate"`
	SlotEndDate       time.Time `json:"slotEndDate"`
	BookedAt          time.Time `json:"bookedAt"`
	PatientGUID       string    `json:"patientGUID,omitempty"`
	// Cloud9AppointmentGUID is the appointment in Cloud9, once made.
	Cloud9AppointmentGUID string `json:"cloud9AppointmentGUID,omitempty"`
	// Status is "booked" (made in Cloud9) or "queued" (the booking
	// core's durable queue will make it; see the operation).
	Status string `json:"status,omitempty"`
}

// Catalog is the availability catalogue as the web face uses it
// (docs/holds.md). Errors should be *contracts.Error (not_found,
// invalid with details.field, unavailable): they are answered as they are.
type Catalog interface {
	AppointmentType(ctx context.Context, id string) (AppointmentType, error)
	// Candidates checks start is on the type's grid and returns the slot's
	// end and the specialists free at it (before holds).
	Candidates(ctx context.Context, appointmentTypeID string, start time.Time, specialistID string) (time.Time, []holds.Candidate, error)
	RecordBooking(ctx context.Context, a Appointment) error
	CancelBooking(ctx context.Context, appointmentID string) (Appointment, error)
}

// Engine is the part of *holds.Engine the web face uses.
type Engine interface {
	ClaimDetailed(ctx context.Context, r holds.ClaimRequest) (holds.Claimed, error)
	Heartbeat(ctx context.Context, clientID, holdID string) (holds.Hold, bool, error)
	Release(ctx context.Context, clientID, holdID string) (bool, error)
	Confirm(ctx context.Context, clientID, holdID, appointmentID string, cooldown time.Duration) (holds.Hold, error)
	ClearCooldown(ctx context.Context, appointmentID string) (bool, error)
	ReleaseBooking(ctx context.Context, appointmentID string, slot holds.Hold) (bool, error)
	BookedAppointment(ctx context.Context, specialistID string, start time.Time) (string, error)
	StartCooldown(ctx context.Context, clientID, appointmentTypeID, appointmentID string, cooldown time.Duration) error
}

// Booker books an External type's held slot in the system of record
// (holds.Booker: the booking rules live in package holds).
type Booker = holds.Booker

// ExternalBooking is what Booker books.
type ExternalBooking = holds.ExternalBooking

// Booked is an External booking made or queued.
type Booked = holds.Booked

// DefaultRequestTimeout bounds each request's Redis and catalogue work.
const DefaultRequestTimeout = 2 * time.Second

// DefaultBookingTimeout bounds an External type's /book (the booking
// core waits within its own sync budget, then queues).
const DefaultBookingTimeout = holds.DefaultBookingTimeout

// Config configures the handlers. Engine and Catalog are required.
type Config struct {
	Engine  Engine
	Catalog Catalog
	// RequestTimeout: a hung Redis answers 503 after this long. Default 2 s.
	RequestTimeout time.Duration
	// CatalogTimeout bounds the catalogue's work of a create and a book
	// (their hold or booking work keeps RequestTimeout): a Cloud9
	// catalogue reads Cloud9 when its list is missing or stale. Default
	// (or when shorter) RequestTimeout.
	CatalogTimeout time.Duration
	// Booker books External types; without it their /book answers 503.
	Booker Booker
	// BookingTimeout bounds an External type's /book, which is not cut
	// when the client goes away. Default 30 s.
	BookingTimeout time.Duration
	// Now stamps bookedAt. Default time.Now.
	Now func() time.Time
	// AppointmentID derives a booking's appointment id from its hold id, so
	// a retried /book records the same appointment. Default the hold id.
	AppointmentID func(holdID string) string
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Handlers serves the web face.
type Handlers struct {
	cfg     Config
	booking *holds.Booking // the rules of /book
}

// New checks cfg.
func New(cfg Config) (*Handlers, error) {
	if cfg.Engine == nil || cfg.Catalog == nil {
		return nil, errors.New("holdshttp: Engine and Catalog are required")
	}
	cfg.RequestTimeout = valutil.PositiveOrDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.CatalogTimeout = max(cfg.CatalogTimeout, cfg.RequestTimeout)
	cfg.BookingTimeout = valutil.PositiveOrDefault(cfg.BookingTimeout, DefaultBookingTimeout)
	cfg.Now = valutil.FuncOrDefault(cfg.Now, time.Now)
	cfg.AppointmentID = valutil.FuncOrDefault(cfg.AppointmentID, func(holdID string) string { return holdID })
	cfg.Logger = valutil.ValOrDefault(cfg.Logger, slog.Default())
	booking, err := holds.NewBooking(holds.BookingConfig{Engine: cfg.Engine, Booker: cfg.Booker, Timeout: cfg.BookingTimeout,
		Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("holdshttp: %w", err)
	}
	return &Handlers{cfg: cfg, booking: booking}, nil
}

// Register mounts the routes on app.
func Register(app fiber.Router, h *Handlers) {
	d := web.Deadline(h.cfg.RequestTimeout)
	withCatalog := web.Deadline(h.cfg.CatalogTimeout) // then holdWork for the rest
	app.Post("/v1/holds", withCatalog, h.create)
	app.Patch("/v1/holds", d, h.heartbeat)
	app.Delete("/v1/holds/:holdId", d, h.release)
	app.Post("/v1/appointment-types/:id/book", withCatalog, h.book)
	app.Delete("/v1/appointments/:appointmentId", d, h.cancel)
}

// HoldResponse is the answer of POST /v1/holds. HoldID is the hold's
// bearer secret, answered here only (with the clientId it is the
// credential of heartbeat, release and book; docs/holds.md); HoldRef is
// its public reference, the "holdId" of the hold's events on the stream.
type HoldResponse struct {
	HoldID        string `json:"holdId"`
	HoldRef       string `json:"holdRef"`
	SpecialistID  string `json:"specialistId"`
	SlotStartDate string `json:"slotStartDate"`
	SlotEndDate   string `json:"slotEndDate"`
	HoldExpiresAt string `json:"holdExpiresAt"`
}

func holdResponse(hd holds.Hold) HoldResponse {
	return HoldResponse{HoldID: hd.HoldID, HoldRef: holds.Ref(hd.HoldID), SpecialistID: hd.SpecialistID,
		SlotStartDate: holds.FormatStart(hd.SlotStartDate), SlotEndDate: holds.FormatStart(hd.SlotEndDate),
		HoldExpiresAt: hd.HoldExpiresAt.UTC().Format(time.RFC3339Nano)}
}

type createRequest struct {
	AppointmentTypeID string `json:"appointmentTypeId"`
	SlotStartDate     string `json:"slotStartDate"`
	ClientID          string `json:"clientId"`
	SpecialistID      string `json:"specialistId"`
}

func (h *Handlers) create(c *fiber.Ctx) error {
	var req createRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	start, err := checkCreate(req)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	t, err := h.cfg.Catalog.AppointmentType(ctx, req.AppointmentTypeID)
	if err != nil {
		return err
	}
	if req.SpecialistID != "" && !contains(t.SpecialistIDs, req.SpecialistID) {
		return notFound("specialistId", "appointment type %s has no specialist %s", t.ID, req.SpecialistID)
	}
	end, cands, err := h.cfg.Catalog.Candidates(ctx, t.ID, start, req.SpecialistID)
	if err != nil {
		return err
	}
	r := holds.ClaimRequest{AppointmentTypeID: t.ID, ClientID: req.ClientID, SlotStart: start, SlotEnd: end,
		Candidates: cands, Cooldown: minutes(t.CooldownMinutes)}
	if req.SpecialistID != "" {
		if !hasCandidate(cands, req.SpecialistID) {
			return conflict(holds.ErrNoCandidates)
		}
		r.SpecialistID = req.SpecialistID
	}
	ctx, cancel := h.holdWork(ctx)
	defer cancel()
	cl, err := h.cfg.Engine.ClaimDetailed(ctx, r)
	if err != nil {
		return h.refusal(c, err)
	}
	if !cl.New {
		// The clientId already holds this slot. A clientId proves nothing
		// (anyone may send any), so its existing hold — whose id is the
		// hold's secret — is not handed out: the slot is taken, as for
		// anyone else. A client whose 201 was lost lets that hold expire.
		return conflict(holds.ErrSlotTaken)
	}
	return c.Status(fiber.StatusCreated).JSON(holdResponse(cl.Hold))
}

// holdWork bounds the hold work that follows a create's or a book's
// catalogue work by RequestTimeout.
func (h *Handlers) holdWork(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.cfg.RequestTimeout)
}

func checkCreate(req createRequest) (time.Time, error) {
	if err := checkID("appointmentTypeId", req.AppointmentTypeID); err != nil {
		return time.Time{}, err
	}
	if err := checkID("clientId", req.ClientID); err != nil {
		return time.Time{}, err
	}
	if req.SpecialistID != "" {
		if err := checkID("specialistId", req.SpecialistID); err != nil {
			return time.Time{}, err
		}
	}
	return parseStart(req.SlotStartDate)
}

// HeartbeatResponse is the answer of PATCH /v1/holds: {ok:true, holdId,
// holdExpiresAt} when the hold was extended; {ok:false} — "client sees false",
// docs/holds.md#the-web-face-v1holds — when there is no live web hold of this client
// with that id (expired, released, booked, unknown, another client's or
// an IVA reservation: one answer for all, so it tells nobody whose a hold
// id is).
type HeartbeatResponse struct {
	OK            bool   `json:"ok"`
	HoldID        string `json:"holdId,omitempty"`
	HoldExpiresAt string `json:"holdExpiresAt,omitempty"`
}

type holdRef struct {
	HoldID   string `json:"holdId"`
	ClientID string `json:"clientId"`
}

func checkRef(r holdRef) error {
	if err := checkID("holdId", r.HoldID); err != nil {
		return err
	}
	return checkID("clientId", r.ClientID)
}

func (h *Handlers) heartbeat(c *fiber.Ctx) error {
	var req holdRef
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := checkRef(req); err != nil {
		return err
	}
	ctx := c.UserContext()
	hd, ok, err := h.cfg.Engine.Heartbeat(ctx, req.ClientID, req.HoldID)
	if err != nil {
		return err
	}
	if !ok {
		// docs/holds.md: a heartbeat that finds the hold gone answers false (200),
		// and the client holds the slot again.
		return c.JSON(HeartbeatResponse{OK: false})
	}
	return c.JSON(HeartbeatResponse{OK: true, HoldID: hd.HoldID, HoldExpiresAt: hd.HoldExpiresAt.UTC().Format(time.RFC3339Nano)})
}

// ReleaseResponse is the answer of DELETE /v1/holds/{holdId}.
type ReleaseResponse struct {
	Released bool `json:"released"`
}

func (h *Handlers) release(c *fiber.Ctx) error {
	if c.Params("holdId") == "stream" {
		// DELETE /v1/holds/stream is the stream's cancel (holdstream),
		// whichever of the two was mounted first; no hold id is "stream".
		return c.Next()
	}
	req := holdRef{HoldID: c.Params("holdId"), ClientID: c.Query("clientId")}
	web.SetLogPath(c, "/v1/holds/"+holds.Ref(req.HoldID)) // the hold id is a secret: logged as its ref
	if err := checkRef(req); err != nil {
		return err
	}
	ctx := c.UserContext()
	ok, err := h.cfg.Engine.Release(ctx, req.ClientID, req.HoldID)
	if err != nil {
		return err
	}
	return c.JSON(ReleaseResponse{Released: ok})
}

// refusal answers a claim refusal: 409, or 429 with Retry-After.
func (h *Handlers) refusal(c *fiber.Ctx, err error) error {
	var qe *holds.QuotaError
	var ce *holds.CooldownError
	switch {
	case errors.As(err, &qe):
		return tooMany(c, "quota", qe.RetryAfter, fmt.Sprintf("client already holds %d slots; retry when one ends", qe.Limit),
			map[string]any{"limit": qe.Limit})
	case errors.As(err, &ce):
		return tooMany(c, "cooldown", ce.Remaining, "client booked this appointment type recently; wait for the cooldown to end", nil)
	case errors.Is(err, holds.ErrSlotTaken), errors.Is(err, holds.ErrNoCandidates):
		return conflict(err)
	}
	return err
}

func tooMany(c *fiber.Ctx, reason string, left time.Duration, msg string, extra map[string]any) error {
	secs := int64(math.Ceil(left.Seconds()))
	if secs < 1 {
		secs = 1
	}
	c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	details := map[string]any{"reason": reason, "retryAfterSeconds": secs, "retryAfterMs": max(left.Milliseconds(), 0)}
	for k, v := range extra {
		details[k] = v
	}
	return &contracts.Error{Code: contracts.CodeRateLimited, Message: msg, Details: details}
}

// conflict is a slot this client cannot have: 409 with details.reason
// "slot_taken" (held by someone else, or nobody free), as a booked slot is
// answered (the catalogue's 409).
func conflict(err error) error {
	msg := "this slot is held by someone else"
	if errors.Is(err, holds.ErrNoCandidates) {
		msg = "no specialist is free at this slot"
	}
	return &contracts.Error{Code: contracts.CodeConflict, Message: msg, Err: err, Details: map[string]any{"reason": reasonSlotTaken}}
}

// reasonSlotTaken is details.reason of a 409 for a slot that is held or
// booked.
const reasonSlotTaken = "slot_taken"

func notFound(field, format string, args ...any) error {
	return contracts.FieldErrorf(contracts.CodeNotFound, field, format, args...)
}

func invalidField(field, format string, args ...any) error {
	return contracts.FieldErrorf(contracts.CodeInvalid, field, format, args...)
}

func decode(c *fiber.Ctx, v any) error {
	body, err := web.PlainBody(c)
	if err != nil {
		return err
	}
	return contracts.DecodeJSON(body, v)
}

func checkID(field, v string) error {
	switch {
	case v == "":
		return invalidField(field, "%s is required", field)
	case len(v) > 200 || strings.ContainsAny(v, ":{} \t\r\n"):
		return invalidField(field, "%s must be at most 200 characters without ':', '{', '}' or spaces", field)
	}
	return nil
}

func parseStart(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, invalidField("slotStartDate", "slotStartDate is required")
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, invalidField("slotStartDate", "slotStartDate %q is not an RFC 3339 time like 2025-03-15T09:00:00Z", s)
	}
	return t.UTC(), nil
}

func minutes(m int) time.Duration {
	if m <= 0 {
		return 0
	}
	return time.Duration(m) * time.Minute
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func hasCandidate(cands []holds.Candidate, id string) bool {
	for _, c := range cands {
		if c.SpecialistID == id {
			return true
		}
	}
	return false
}
